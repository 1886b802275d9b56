"""Drawer dedup (SPEC §4): exact, normalized and near copies within a room are linked, never merged.

Two independent sources saying the same thing are two pieces of evidence, so mined drawers are always stored and
linked (`similar_to`). Near copies are found through MinHash: each drawer's character 5-gram set gets a 32-value
signature cut into 8 bands of 4; drawers of the same room sharing band keys are candidates, confirmed by the exact
Jaccard similarity of their 5-gram sets. With 8 bands of 4, a pair at similarity 0.9 shares a band with probability
0.997 in at least two bands (required), while a pair at 0.5 does so with probability 0.085.

A note's keys are filed with it and it is linked at once. A mined drawer is only queued as it is filed: its keys
cost a fifth of a mine, so the `link` sweep that follows the mine (a background job) computes them and links the
queue a batch at a time (`DuplicateFinder.settle`), each drawer to the copies filed before it, with a few indexed
queries for the whole batch whatever the size of its rooms. The queue is worked in filing order, so the links are the
same as when each drawer was linked as it was filed. A crash leaves the queue, and the next sweep links it.
"""

from __future__ import annotations

import functools
import hashlib
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from memcastle.clock import Clock, utc_now
from memcastle.jobs.context import JobContext
from memcastle.model import Drawer, DrawerLink, NearCandidate, NearKeys, NearSubject, normalize_text
from memcastle.model.jobs import JobKind
from memcastle.store import NearStore

KIND = JobKind.LINK.value  # the background sweep that links queued drawers to their copies
COALESCE_KEY = "link"
NEAR_MIN_CHARS = 12
SHINGLE = 5
BANDS = 8
ROWS = 4
CANDIDATES = 20
EXACT_LIMIT = 50  # exact and normalized copies linked to one drawer: the earliest filed
SETTLE_BATCH = 256  # queued drawers linked together: a few queries for the whole batch
# A pair at similarity 0.9 shares 2+ of 8 bands with probability 0.997; a pair at 0.5 only 0.085: the exact check
# runs on few drawers even in a room of look-alike files.
MIN_SHARED_BANDS = 2
ESTIMATE_SLACK = 0.15
_PRIME = np.uint64((1 << 31) - 1)
_SHIFT = np.uint64(31)
_WINDOW = np.uint64((1 << (8 * SHINGLE)) - 1)
_BLOCK = 1024  # grams hashed at a time: 32 × 1024 × 8 bytes, 256 KB, stays in a core's cache
# Fixed coefficients: signatures must be comparable across runs and daemons.
_RANDOM = np.random.default_rng(20261129)
_A = _RANDOM.integers(1, int(_PRIME), size=BANDS * ROWS, dtype=np.uint64)
_B = _RANDOM.integers(0, int(_PRIME), size=BANDS * ROWS, dtype=np.uint64)


def shingles(text: str) -> set[str]:
    return normal_shingles(normalize_text(text))


def normal_shingles(normal: str) -> set[str]:
    """The character 5-grams of an already normalized text."""
    if len(normal) <= SHINGLE:
        return {normal}
    return {normal[i : i + SHINGLE] for i in range(len(normal) - SHINGLE + 1)}


def similarity(a: str, b: str) -> float:
    """Jaccard similarity of character 5-gram sets of the normalized texts."""
    left, right = shingles(a), shingles(b)
    union = len(left | right)
    return len(left & right) / union if union else 1.0


def gram_hashes(normal: str) -> npt.NDArray[np.uint64]:
    """31-bit hashes of the distinct 5-byte windows of a normalized text, computed with numpy in one pass."""
    data = normal.encode("utf-8")
    if len(data) < SHINGLE:
        wide = np.frombuffer(data, dtype=np.uint8).astype(np.uint64).tobytes()  # as signatures were always made
        return np.array([zlib.crc32(wide) % int(_PRIME)], dtype=np.uint64)
    count = len(data) - (SHINGLE - 1)
    # Each window's five bytes as a little-endian integer: an 8-byte read at every byte offset (three bytes of
    # padding keep the last read inside the buffer), the three bytes past the window masked off.
    padded = data + bytes(8 - SHINGLE)
    windows = np.ndarray((count,), dtype="<u8", buffer=padded, strides=(1,)) & _WINDOW
    # Distinct windows by sorting (numpy's hashed `unique` takes ~6× longer on arrays this size).
    windows.sort()
    distinct = np.empty(count, dtype=bool)
    distinct[0] = True
    np.not_equal(windows[1:], windows[:-1], out=distinct[1:])
    # Multiplicative hashing (wrapping in uint64 on purpose), top 31 bits kept.
    return (windows[distinct] * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(33)


def signature(text: str) -> npt.NDArray[np.uint64]:
    """MinHash: for each of 32 universal hash functions, the smallest value over the text's 5-gram hashes."""
    return normal_signature(normalize_text(text))


def normal_signature(normal: str) -> npt.NDArray[np.uint64]:
    """`signature` of an already normalized text."""
    hashes = gram_hashes(normal)
    # (a·h + b) mod p with a, h < 2^31 stays below 2^63: no overflow in uint64. p = 2^31 − 1 is a Mersenne prime, so
    # x mod p folds as (x & p) + (x >> 31) — twice brings x below p + 2, the minima are then reduced once: the same
    # values as `%` at a fraction of a division's cost, in place on one (32 × grams) array — a block of grams at a
    # time, so that the array stays in the CPU's cache through the seven passes (1.8× faster than the whole at once).
    minimum: npt.NDArray[np.uint64] | None = None
    for start in range(0, len(hashes), _BLOCK):
        x = np.multiply.outer(_A, hashes[start : start + _BLOCK])
        x += _B[:, None]
        folded = x & _PRIME
        x >>= _SHIFT
        folded += x
        x = folded & _PRIME
        folded >>= _SHIFT
        x += folded
        least = x.min(axis=1)
        minimum = least if minimum is None else np.minimum(minimum, least)
    assert minimum is not None  # a text has one gram at least
    return np.where(minimum >= _PRIME, minimum - _PRIME, minimum)


def band_keys(wing: str, room: str, values: npt.NDArray[np.uint64]) -> list[int]:
    """One signed 64-bit key per band of a signature, scoped to the room."""
    keys = []
    for band in range(BANDS):
        digest = hashlib.blake2b(
            f"{wing}\x00{room}\x00{band}\x00".encode() + values[band * ROWS : (band + 1) * ROWS].tobytes(),
            digest_size=8,
        ).digest()
        keys.append(int.from_bytes(digest, "little", signed=True))
    return keys


@dataclass(frozen=True)
class _Text:
    """A subject's or candidate's text, normalized once and cut into 5-grams only when compared."""

    normal: str

    @functools.cached_property
    def grams(self) -> set[str]:
        return normal_shingles(self.normal)


class DuplicateFinder:
    """Finds and links the current drawers of the same room that say the same as a drawer filed before them.

    A drawer's keys (`keys`) are filed with it and queue it; `settle` links queued drawers a batch at a time, each to
    the copies filed before it (so a pair is linked once, from the later drawer to the earlier, as when each was
    linked on its own as it was filed)."""

    def __init__(self, near: NearStore, near_threshold: float, *, now: Clock = utc_now, enabled: bool = True) -> None:
        self._near = near
        self._now = now
        self._threshold = near_threshold
        self._enabled = enabled  # `dedup.enabled`: off, no keys are filed and nothing is linked

    @property
    def enabled(self) -> bool:
        return self._enabled

    def keys(self, drawer_id: str, wing: str, room: str, content: str) -> NearKeys:
        """What finds the drawer's copies (text normalized once: the store's fingerprint reads the same cache)."""
        if not self._enabled:
            return NearKeys(drawer_id)
        normal = normalize_text(content)
        if len(normal) < NEAR_MIN_CHARS:
            return NearKeys(drawer_id)
        values = normal_signature(normal)
        return NearKeys(drawer_id, tuple(band_keys(wing, room, values)), values.astype(np.uint64).tobytes())

    def link(self, drawer: Drawer) -> int:
        """File one drawer's keys and link it now (a manual write); returns how many links it has."""
        self._near.add_keys([self.keys(drawer.id, drawer.wing, drawer.room, drawer.content)])
        return self.settle([drawer.id]).get(drawer.id, 0)

    def settle(self, drawer_ids: Sequence[str] | None = None, *, batch: int = SETTLE_BATCH) -> dict[str, int]:
        """Link queued drawers (these, or every queued one) a batch at a time; drawer id → links, for those linked."""
        linked: dict[str, int] = {}
        if drawer_ids is not None:
            for start in range(0, len(drawer_ids), batch):
                linked.update(self._settle(self._near.pending(batch, drawer_ids[start : start + batch])))
            return linked
        while subjects := self._near.pending(batch):
            linked.update(self._settle(subjects))
        return linked

    def run(self, ctx: JobContext) -> Mapping[str, Any]:
        """The `link` job: the queued drawers (a mine's), oldest first, keyed and linked a batch at a time."""
        # checked: drawers looked at; linked: those found to copy one filed before them; links: the links written.
        tally = {"checked": 0, "linked": 0, "links": 0}
        tally |= {k: int(v) for k, v in ctx.state.items() if k in tally and isinstance(v, int)}
        left = self._near.count_pending()
        while subjects := self._near.pending(SETTLE_BATCH):
            linked = self._settle(subjects)
            tally["checked"] += len(subjects)
            tally["linked"] += len(linked)
            tally["links"] += sum(linked.values())
            left = max(0, left - len(subjects))
            ctx.checkpoint(
                dict(tally),
                current=tally["checked"],
                total=tally["checked"] + left,
                message=f"{tally['linked']} drawers linked to their copies",
            )
        return tally

    def _keyed(self, subjects: list[NearSubject]) -> list[NearSubject]:
        """The subjects with their keys: those queued without (a mine's) get them computed and filed now."""
        missing = [s.seq for s in subjects if s.current and not s.signature]
        if not missing or not self._enabled:
            return subjects
        texts = self._near.texts(missing)
        keys = {seq: self.keys(*text) for seq, text in texts.items()}
        self._near.add_keys([k for k in keys.values() if k.signature])
        return [
            replace(s, bands=tuple(sorted(set(keys[s.seq].bands))), signature=keys[s.seq].signature)
            if s.seq in keys and keys[s.seq].signature
            else s
            for s in subjects
        ]

    def _settle(self, subjects: list[NearSubject]) -> dict[str, int]:
        subjects = self._keyed(subjects)
        links = self._links([s for s in subjects if s.current])
        self._near.settle([s.seq for s in subjects], links)
        counts: dict[str, int] = {}
        for link in links:
            counts[link.from_id] = counts.get(link.from_id, 0) + 1
        return counts

    def _links(self, subjects: list[NearSubject]) -> list[DrawerLink]:
        if not subjects or not self._enabled:
            return []
        now = self._now()
        found: dict[int, dict[str, DrawerLink]] = {s.seq: {} for s in subjects}
        # Exact and normalized copies: the earliest 50 filed before the subject in its room.
        by_hash: dict[tuple[int, str], list[NearCandidate]] = {}
        by_fingerprint: dict[tuple[int, str], list[NearCandidate]] = {}
        for c in self._near.copies(subjects):  # in filing order
            by_hash.setdefault((c.room_id, c.content_hash), []).append(c)
            by_fingerprint.setdefault((c.room_id, c.fingerprint), []).append(c)
        for subject in subjects:
            same = {
                c.seq: c
                for c in (
                    *by_hash.get((subject.room_id, subject.content_hash), ()),
                    *by_fingerprint.get((subject.room_id, subject.fingerprint), ()),
                )
                if c.seq < subject.seq
            }
            for seq in sorted(same)[:EXACT_LIMIT]:
                c = same[seq]
                verdict = "exact" if c.content_hash == subject.content_hash else "normalized"
                found[subject.seq][c.id] = DrawerLink(subject.id, c.id, verdict, 1.0, now)
        # Near copies: drawers filed before the subject sharing at least two of its bands, most shared first.
        with_bands = [s for s in subjects if s.bands]
        sharing: dict[int, list[tuple[int, int, NearCandidate]]] = {}
        for seq, c, shared in self._near.sharing_bands([s.seq for s in with_bands], MIN_SHARED_BANDS):
            if c.id not in found[seq]:
                sharing.setdefault(seq, []).append((-shared, c.seq, c))
        shortlist = {seq: [c for _, _, c in sorted(ranked)[:CANDIDATES]] for seq, ranked in sharing.items()}
        if not any(shortlist.values()):
            return [link for links in found.values() for link in links.values()]
        # The signatures estimate similarity (±0.05 at 0.9); only plausible pairs have their text compared.
        signatures = self._near.signatures(c.seq for cs in shortlist.values() for c in cs)
        plausible: dict[int, list[NearCandidate]] = {}
        for subject in with_bands:
            own = np.frombuffer(subject.signature, dtype=np.uint64)
            keep = [
                c
                for c in shortlist.get(subject.seq, ())
                if c.room_id == subject.room_id
                and (
                    c.seq not in signatures
                    or float(np.mean(np.frombuffer(signatures[c.seq], dtype=np.uint64) == own))
                    >= self._threshold - ESTIMATE_SLACK
                )
            ]
            if keep:
                plausible[subject.seq] = keep
        if not plausible:
            return [link for links in found.values() for link in links.values()]
        texts = {
            seq: _Text(normalize_text(content))
            for seq, content in self._near.contents(
                [*plausible, *(c.seq for cs in plausible.values() for c in cs)]
            ).items()
        }
        for subject in with_bands:
            own_text = texts.get(subject.seq)
            if own_text is None:
                continue
            for c in plausible.get(subject.seq, ()):
                other = texts.get(c.seq)
                if other is None:
                    continue
                union = len(own_text.grams | other.grams)
                score = len(own_text.grams & other.grams) / union if union else 1.0
                if score >= self._threshold:
                    found[subject.seq][c.id] = DrawerLink(subject.id, c.id, "near", round(score, 4), now)
        return [link for links in found.values() for link in links.values()]
