"""Archives at the service seam: an export or an import of the palace as a background job (docs/lifecycle.md)."""

from __future__ import annotations

from pathlib import Path

from memcastle.archive import EXPORT, IMPORT
from memcastle.errors import Conflict, InvalidRequest
from memcastle.mining.roots import MiningRoots
from memcastle.model import Job
from memcastle.services.jobs import JobService
from memcastle.services.validation import MAX_LOCATOR_CHARS, check_text


class ArchiveService:
    """Write the palace to a portable archive, or load one into it, in the background."""

    def __init__(self, jobs: JobService, roots: MiningRoots | None = None) -> None:
        self._jobs = jobs
        self._roots = roots or MiningRoots()

    def export(self, path: str, *, vectors: bool = False, requested_by: str = "http") -> Job:
        """Queue an export to `path`, a file that does not exist yet, in a folder that does (inside `mining.roots`)."""
        target = self._path(path, folder=True)
        if target.exists():
            raise Conflict(f"{target} already exists", help="choose a new file name; an export never overwrites")
        job = self._jobs.submit_job(
            EXPORT, {"path": str(target), "vectors": bool(vectors)}, requested_by=requested_by,
            coalesce_key=f"export:{target}",
        ).job  # fmt: skip
        return job

    def import_archive(self, path: str, *, requested_by: str = "http") -> Job:
        """Queue an import of the archive at `path` (inside `mining.roots`)."""
        source = self._path(path)
        if not source.is_file():
            raise InvalidRequest(f"no archive at {source}", field="path")
        job = self._jobs.submit_job(
            IMPORT, {"path": str(source)}, requested_by=requested_by, coalesce_key=f"import:{source}"
        ).job
        return job

    def _path(self, path: str, *, folder: bool = False) -> Path:
        """An absolute path inside `mining.roots` (for an export, its folder must be there and exist)."""
        if not isinstance(path, str) or not path.strip() or len(path) > MAX_LOCATOR_CHARS:
            raise InvalidRequest(f"path must be a file path of at most {MAX_LOCATOR_CHARS} characters", field="path")
        check_text(path, "path")
        try:
            target = Path(path).expanduser()
        except RuntimeError:  # `~name` for a user this machine does not have
            raise InvalidRequest(f"{path!r} names the home folder of an unknown user", field="path") from None
        if not target.is_absolute():
            raise InvalidRequest("path must be absolute (the daemon runs in another folder)", field="path")
        if folder and not target.parent.is_dir():
            raise InvalidRequest(f"no folder {target.parent} to write the archive in", field="path")
        self._roots.check(str(target.parent if folder else target))
        return target
