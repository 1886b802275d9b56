"""Comparing two rankings of scored drawers."""

from __future__ import annotations


def same_ranking(got: list[tuple[str, float]], want: list[tuple[str, float]], tolerance: float = 1e-5) -> bool:
    """Equal score for score (within `tolerance`); drawer for drawer within each run of equal scores, in any order
    (two sums of the same terms may differ in their last bit), except the last run, which the limit may cut anywhere."""
    if len(got) != len(want) or any(abs(a - b) > tolerance for (_, a), (_, b) in zip(got, want, strict=True)):
        return False
    runs: list[tuple[float, set[str], set[str]]] = []
    for (a, score), (b, _) in zip(got, want, strict=True):
        if not runs or abs(score - runs[-1][0]) > tolerance:
            runs.append((score, set(), set()))
        runs[-1][1].add(a)
        runs[-1][2].add(b)
    return all(ours == theirs for _, ours, theirs in runs[:-1])
