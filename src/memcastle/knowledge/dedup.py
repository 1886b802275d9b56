"""Drawer dedup (SPEC §4): exact, normalized and near copies within a room are linked, never merged.

Two independent sources saying the same thing are two pieces of evidence, so mined drawers are always stored and
linked (`similar_to`). Near copies are found through MinHash: each drawer's character 5-gram set gets a 32-value
signature cut into 8 bands of 4; drawers of the same room sharing band keys are candidates, confirmed by the exact
Jaccard similarity of their 5-gram sets. With 8 bands of 4, a pair at similarity 0.9 shares a band with probability
0.997 in at least two bands (required), while a pair at 0.5 does so with probability 0.085; a lookup costs one
indexed query whatever the size of the room.
"""

from __future__ import annotations

import hashlib
import zlib

import numpy as np
import numpy.typing as npt

from memcastle.clock import Clock, utc_now
from memcastle.model import Drawer, DrawerLink, normalize_text
from memcastle.store import KnowledgeStore

NEAR_MIN_CHARS = 12
SHINGLE = 5
BANDS = 8
ROWS = 4
CANDIDATES = 20
# A pair at similarity 0.9 shares 2+ of 8 bands with probability 0.997; a pair at 0.5 only 0.085: the exact check
# runs on few drawers even in a room of look-alike files.
MIN_SHARED_BANDS = 2
ESTIMATE_SLACK = 0.15
_PRIME = np.uint64((1 << 31) - 1)
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
    data = np.frombuffer(normal.encode("utf-8"), dtype=np.uint8).astype(np.uint64)
    if len(data) < SHINGLE:
        return np.array([zlib.crc32(data.tobytes()) % int(_PRIME)], dtype=np.uint64)
    windows = data[: len(data) - 4]
    for offset in range(1, SHINGLE):
        windows = windows | (data[offset : len(data) - 4 + offset] << np.uint64(8 * offset))
    # Multiplicative hashing (wrapping in uint64 on purpose), top 31 bits kept.
    return (np.unique(windows) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(33)


def signature(text: str) -> npt.NDArray[np.uint64]:
    """MinHash: for each of 32 universal hash functions, the smallest value over the text's 5-gram hashes."""
    return normal_signature(normalize_text(text))


def normal_signature(normal: str) -> npt.NDArray[np.uint64]:
    """`signature` of an already normalized text."""
    hashes = gram_hashes(normal)
    # (a·h + b) mod p with a, h < 2^31 stays below 2^63: no overflow in uint64.
    minimum: npt.NDArray[np.uint64] = ((_A[:, None] * hashes[None, :] + _B[:, None]) % _PRIME).min(axis=1)
    return minimum


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


class DuplicateFinder:
    """Finds and links the current drawers of the same room that say the same as a given drawer."""

    def __init__(self, store: KnowledgeStore, near_threshold: float, *, now: Clock = utc_now) -> None:
        self._store = store
        self._now = now
        self._threshold = near_threshold

    def links_for(
        self, drawer: Drawer, values: npt.NDArray[np.uint64] | None, bands: list[int], normal: str | None = None
    ) -> list[DrawerLink]:
        """The drawer's links: exact and normalized copies in its room, and near ones among the drawers sharing its
        bands (`normal`: its normalized text, when the caller has it already)."""
        now = self._now()
        found: dict[str, DrawerLink] = {}
        for other, verdict in self._store.graph.similar_in_room(
            drawer.wing, drawer.room, drawer.content_hash, drawer.fingerprint, exclude=[drawer.id]
        ):
            found[other] = DrawerLink(drawer.id, other, verdict, 1.0, now)
        if bands:
            candidates = [
                i
                for i in self._store.graph.drawers_sharing_bands(bands, CANDIDATES, at_least=MIN_SHARED_BANDS)
                if i != drawer.id and i not in found
            ]
            assert values is not None
            # The signatures estimate similarity (±0.05 at 0.9); only plausible pairs have their text compared.
            estimates = {
                i: float(np.mean(np.frombuffer(s, dtype=np.uint64) == values))
                for i, s in self._store.graph.drawer_signatures(candidates).items()
            }
            plausible = [i for i in candidates if estimates.get(i, 1.0) >= self._threshold - ESTIMATE_SLACK]
            own = normal if normal is not None else normalize_text(drawer.content)
            grams = normal_shingles(own) if plausible else set()
            for near in self._store.drawers.get_drawers(plausible).values():
                if not near.is_current or (near.wing, near.room) != (drawer.wing, drawer.room):
                    continue
                other_grams = shingles(near.content)
                union = len(grams | other_grams)
                score = len(grams & other_grams) / union if union else 1.0
                if score >= self._threshold:
                    found[near.id] = DrawerLink(drawer.id, near.id, "near", round(score, 4), now)
        return list(found.values())

    def link(self, drawer: Drawer) -> int:
        """Index the drawer's bands and record its links; returns how many it has."""
        normal = normalize_text(drawer.content)  # once: the signature and the exact comparison both read it
        values = normal_signature(normal) if len(normal) >= NEAR_MIN_CHARS else None
        bands = band_keys(drawer.wing, drawer.room, values) if values is not None else []
        links = self.links_for(drawer, values, bands, normal)
        if values is not None:
            self._store.graph.add_drawer_bands(drawer.id, bands, values.astype(np.uint64).tobytes())
        if links:
            self._store.graph.add_drawer_links(links)
        return len(links)
