"""The job transition table (SPEC §1) as the model states it.

That the stores enforce it — every (from, to) pair, on every backend — is tested in tests/store/test_contract.py.
"""

from __future__ import annotations

import itertools

import pytest

from memcastle.model import JobStatus, is_legal_transition

Q, R, P, C, F, X = (
    JobStatus.QUEUED,
    JobStatus.RUNNING,
    JobStatus.PAUSED,
    JobStatus.COMPLETED,
    JobStatus.FAILED,
    JobStatus.CANCELLED,
)

# Written out from SPEC §1, independently of `memcastle.model.JOB_TRANSITIONS`.
SPEC_TABLE = {
    (Q, R),  # claim
    (R, P),  # pause
    (P, Q),  # resume
    (R, C),
    (R, F),  # finish
    (Q, X),
    (P, X),
    (R, X),  # cancel
    (R, Q),  # crash recovery / shutdown, within budget
    (F, Q),  # retry
}
ALL_PAIRS = list(itertools.product(JobStatus, repeat=2))


@pytest.mark.parametrize(("current", "target"), ALL_PAIRS, ids=[f"{a.value}->{b.value}" for a, b in ALL_PAIRS])
def test_model_allows_exactly_the_spec_transitions(current: JobStatus, target: JobStatus) -> None:
    assert is_legal_transition(current, target) is ((current, target) in SPEC_TABLE)


def test_no_status_may_transition_to_itself() -> None:
    assert not any(is_legal_transition(status, status) for status in JobStatus)


def test_finished_statuses_are_terminal_except_retry_of_failed() -> None:
    exits = {(a, b) for a, b in ALL_PAIRS if a in (C, X, F) and is_legal_transition(a, b)}
    assert exits == {(F, Q)}


def test_job_status_values_are_the_spec_names() -> None:
    assert {s.value for s in JobStatus} == {"queued", "running", "paused", "completed", "failed", "cancelled"}
