"""Portable archives of a palace: `export` writes one, `import` loads one (docs/lifecycle.md, ADR 0017).

An archive is a zip file: `manifest.json` (the format and its version, the palace's schema version, counts per
record kind, whether vectors are in it), then one JSON Lines member per record kind (`drawers.jsonl`, `facts.jsonl`,
…, in `memcastle.store.sql.archive.ARCHIVE_KINDS` order), and the palace's `preferences.toml` when it has one.
Records are the domain's, keyed by stable ids, so an archive loads into an empty palace or an existing one, on
either backend, and loading it twice adds nothing.
"""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from memcastle import __version__
from memcastle.clock import utc_now
from memcastle.errors import Conflict, InvalidRequest, StorageError
from memcastle.jobs.context import JobContext
from memcastle.model.jobs import JobKind
from memcastle.store import Store
from memcastle.store.sql.archive import ARCHIVE_KINDS

EXPORT = JobKind.EXPORT.value
IMPORT = JobKind.IMPORT.value
FORMAT = "memcastle-archive"
VERSION = 1
MANIFEST = "manifest.json"
PREFERENCES = "preferences.toml"
BATCH = 500
MAX_REASONS = 50
CHECKPOINT_EVERY = 2000


def member(kind: str) -> str:
    return f"{kind}.jsonl"


@dataclass(frozen=True)
class ArchiveManifest:
    schema_version: int
    exported_at: str
    counts: Mapping[str, int]
    vectors: bool
    preferences: bool
    generator: str = f"memcastle {__version__}"

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "generator": self.generator,
            "schema_version": self.schema_version,
            "exported_at": self.exported_at,
            "counts": dict(self.counts),
            "vectors": self.vectors,
            "preferences": self.preferences,
        }


def read_manifest(archive: zipfile.ZipFile, path: str) -> ArchiveManifest:
    """The manifest of an archive, checked: a file that is not an archive of this format, or of a later version, is
    refused with what it is."""
    try:
        data = json.loads(archive.read(MANIFEST))
    except KeyError:
        raise InvalidRequest(f"{path} has no {MANIFEST}: not a MemCastle archive", field="path") from None
    except ValueError as exc:
        raise InvalidRequest(f"{path}: {MANIFEST} is not JSON ({exc})", field="path") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InvalidRequest(f"{path} is not a MemCastle archive ({MANIFEST} names no {FORMAT})", field="path")
    if not isinstance(data.get("version"), int) or data["version"] > VERSION:
        raise InvalidRequest(
            f"{path} is archive version {data.get('version')}; this MemCastle reads version {VERSION} and older",
            field="path",
            help="import it with the MemCastle version that wrote it, or a later one",
        )
    return ArchiveManifest(
        schema_version=int(data.get("schema_version", 0)),
        exported_at=str(data.get("exported_at", "")),
        counts={str(k): int(v) for k, v in dict(data.get("counts", {})).items()},
        vectors=bool(data.get("vectors")),
        preferences=bool(data.get("preferences")),
        generator=str(data.get("generator", "")),
    )


def _open_archive(path: Path) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except FileNotFoundError:
        raise InvalidRequest(f"no archive at {path}", field="path") from None
    except (zipfile.BadZipFile, OSError) as exc:
        raise InvalidRequest(f"{path} is not a MemCastle archive: {exc}", field="path") from None


class ArchiveJobs:
    """The `export` and `import` job handlers of one palace."""

    def __init__(self, store: Store, palace: Path) -> None:
        self._store = store
        self._palace = palace

    # --- export -------------------------------------------------------------------------------------

    def export(self, ctx: JobContext) -> Mapping[str, Any]:
        """Write the archive to a temporary file beside the target, then move it into place: a crash leaves no
        half archive under the target's name (an interrupted export starts again)."""
        target = Path(ctx.params["path"])
        vectors = bool(ctx.params.get("vectors"))
        partial = target.with_name(target.name + ".partial")
        counts: dict[str, int] = {}
        preferences = self._palace / PREFERENCES
        total = max(1, self._store.drawers.count_drawers())
        written = 0
        try:
            with (
                self._store.archive.archive_snapshot() as snapshot,
                zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as zf,
            ):
                for kind in ARCHIVE_KINDS:
                    if kind == "vectors" and not vectors:
                        continue
                    counts[kind] = 0
                    with zf.open(member(kind), "w", force_zip64=True) as out:
                        for record in snapshot.records(kind):
                            out.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")
                            counts[kind] += 1
                            written += 1
                            if written % CHECKPOINT_EVERY == 0:
                                done = counts.get("drawers", 0)
                                ctx.checkpoint({}, current=min(done, total), total=total, message=f"writing {kind}")
                if preferences.is_file():
                    zf.writestr(PREFERENCES, preferences.read_bytes())
                manifest = ArchiveManifest(
                    schema_version=self._store.schema_version(),
                    exported_at=utc_now(),
                    counts=counts,
                    vectors=vectors,
                    preferences=preferences.is_file(),
                )
                zf.writestr(MANIFEST, json.dumps(manifest.to_json(), indent=2))
            os.replace(partial, target)
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        ctx.checkpoint({}, current=total, total=total, message="written")
        return {"path": str(target), "bytes": target.stat().st_size, "counts": counts, "vectors": vectors}

    # --- import -------------------------------------------------------------------------------------

    def import_(self, ctx: JobContext) -> Mapping[str, Any]:
        """Check every record against this palace first (a conflict refuses the whole archive, naming the records),
        then load kind by kind in batches; a record already here is skipped, so a resumed import adds nothing twice.
        A line that is not a JSON object is skipped with its reason."""
        path = Path(ctx.params["path"])
        with _open_archive(path) as archive:
            manifest = read_manifest(archive, str(path))
            kinds = [k for k in ARCHIVE_KINDS if member(k) in archive.namelist()]
            total = max(1, sum(manifest.counts.get(k, 0) for k in kinds))
            skipped: list[dict[str, Any]] = []
            conflicts: list[str] = []
            for kind in kinds:
                for batch in self._batches(archive, kind, skipped):
                    conflicts.extend(self._store.archive.archive_conflicts(kind, batch))
                    if len(conflicts) >= MAX_REASONS:
                        break
            if conflicts:
                raise Conflict(
                    f"the archive conflicts with this palace in {len(conflicts)} record(s): {'; '.join(conflicts[:5])}",
                    help="nothing was imported; import into an empty palace, or forget the clashing records here",
                )
            state = dict(ctx.state)
            added = {k: int(v) for k, v in dict(state.get("added", {})).items()}
            present = {k: int(v) for k, v in dict(state.get("present", {})).items()}
            done_kinds = set(state.get("done", []))
            loaded = sum(added.values()) + sum(present.values())
            skipped = []
            for kind in kinds:
                if kind in done_kinds:
                    continue
                for batch in self._batches(archive, kind, skipped):
                    new, here = self._load(kind, batch, skipped)
                    added[kind] = added.get(kind, 0) + new
                    present[kind] = present.get(kind, 0) + here
                    loaded += len(batch)
                    ctx.checkpoint(
                        {"added": added, "present": present, "done": sorted(done_kinds)},
                        current=min(loaded, total),
                        total=total,
                        message=f"loading {kind}",
                    )
                done_kinds.add(kind)
            warnings = self._preferences(archive, manifest)
        return {
            "path": str(path),
            "added": added,
            "present": present,
            "skipped": len(skipped),
            "skipped_records": skipped[:MAX_REASONS],
            "warnings": warnings,
            "schema_version": manifest.schema_version,
        }

    def _batches(
        self, archive: zipfile.ZipFile, kind: str, skipped: list[dict[str, Any]]
    ) -> Iterator[list[dict[str, Any]]]:
        batch: list[dict[str, Any]] = []
        with archive.open(member(kind)) as raw:
            for number, line in enumerate(_lines(raw), start=1):
                try:
                    record = json.loads(line)
                except ValueError as exc:
                    skipped.append({"member": member(kind), "line": number, "reason": f"not JSON: {exc}"})
                    continue
                if not isinstance(record, dict):
                    skipped.append({"member": member(kind), "line": number, "reason": "not a JSON object"})
                    continue
                record["_line"] = number
                batch.append(record)
                if len(batch) >= BATCH:
                    yield batch
                    batch = []
        if batch:
            yield batch

    def _load(self, kind: str, batch: list[dict[str, Any]], skipped: list[dict[str, Any]]) -> tuple[int, int]:
        """A batch in one transaction; when one of its records is malformed, each record alone, skipping the bad
        ones with their reason."""
        try:
            return self._store.archive.load_records(kind, batch)
        except (Conflict, StorageError):  # a full disk is no malformed record: the job pauses, nothing is skipped
            raise
        except Exception as first:  # noqa: BLE001 - a malformed record or a missing parent: find which
            if len(batch) == 1:
                skipped.append({"member": member(kind), "line": batch[0]["_line"], "reason": _reason(first)})
                return 0, 0
        added = here = 0
        for record in batch:
            try:
                new, old = self._store.archive.load_records(kind, [record])
            except (Conflict, StorageError):
                raise
            except Exception as exc:  # noqa: BLE001 - one bad record must not abort the import
                skipped.append({"member": member(kind), "line": record["_line"], "reason": _reason(exc)})
                continue
            added, here = added + new, here + old
        return added, here

    def _preferences(self, archive: zipfile.ZipFile, manifest: ArchiveManifest) -> list[str]:
        if PREFERENCES not in archive.namelist():
            return []
        theirs = archive.read(PREFERENCES)
        ours = self._palace / PREFERENCES
        if not ours.exists():
            ours.parent.mkdir(parents=True, exist_ok=True)
            ours.write_bytes(theirs)
            return [f"{PREFERENCES} was taken from the archive; restart the daemon for it to apply"]
        if ours.read_bytes() != theirs:
            return [f"this palace has its own {PREFERENCES}; the archive's was not applied"]
        return []


def _lines(raw: IO[bytes]) -> Iterator[str]:
    for line in raw:
        text = line.decode("utf-8", errors="replace").strip()
        if text:
            yield text


def _reason(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return f"missing field {exc.args[0]!r}"
    return f"{type(exc).__name__}: {exc}"
