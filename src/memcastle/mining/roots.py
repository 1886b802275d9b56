"""What may be mined: only paths inside the configured roots, and never a known secret store unless a root names it.

The default root is the user's home directory: their projects, notes and agent logs can be mined with no
configuration at all (the README's first session does exactly that), while the system (`/etc`, `/proc`, …) and the
places that hold credentials (`~/.ssh`, `~/.aws`, …) stay out, even when a symlink points into them. Every source is
checked when it is asked for, so a refused one is an answer to the request, not a job that "completes" empty, and
again when its job runs (a symlink may have changed meanwhile); the check is on the resolved paths the connector will
read, never on the locator's syntax.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from memcastle.connectors.contract import Connector, SourceSpec, local_path, refused_by_os
from memcastle.errors import AccessDenied, NotFound

# Refused unless a root lies inside one of them (so naming one explicitly is the only way in).
SECRET_STORES = (
    "~/.ssh",
    "~/.gnupg",
    "~/.aws",
    "~/.kube",
    "~/.docker",
    "~/.netrc",
    "~/.pgpass",
    "~/.password-store",
    "~/.config/gcloud",
    "~/.azure",
    "~/.config/gh",
    "~/.oci",
    "~/.terraform.d",
    "~/.vault-token",
    "/etc",
    "/proc",
    "/sys",
    "/dev",
)
DEFAULT_ROOTS = ("~",)


def _resolved(path: str | Path) -> Path:
    return Path(path).expanduser().resolve()


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


class MiningRoots:
    """The folders mining may read: every path a source reads is checked, after it is resolved, against them."""

    def __init__(self, roots: Sequence[str | Path] = DEFAULT_ROOTS, *, hard_links: bool = False) -> None:
        self.roots = tuple(_resolved(root) for root in roots)
        # A file with several names is read only when allowed: where its other names lie, no path says (ADR 0050).
        self.hard_links = hard_links
        self._secrets = tuple(_resolved(store) for store in SECRET_STORES)

    def allows(self, path: Path) -> bool:
        """Whether a resolved path lies inside a root and outside every secret store no root names."""
        return self._refusal(path) is None

    def check_source(self, connector: Connector, source: SourceSpec) -> None:
        """Refuse a source that would read anything outside the roots: the paths the connector says it reads, else
        its locator as one path — resolved, so `..`, symlinks and odd syntax (`x://..`) change nothing."""
        for path in connector.local_paths(source):
            self.check_path(Path(path))

    def check(self, locator: str) -> None:
        """Refuse a locator (an absolute path) outside every root, inside a secret store no root names, or missing."""
        self.check_path(local_path(SourceSpec(locator)))

    def check_path(self, path: Path) -> None:
        try:
            path = path.resolve()
            refusal = self._refusal(path)
            if refusal is not None:
                raise refusal
            if not path.exists():
                raise NotFound(f"{path} does not exist", help="check the path")
        except PermissionError as exc:
            raise refused_by_os(path, exc) from None

    def _refusal(self, path: Path) -> AccessDenied | None:
        for store in self._secrets:
            if _inside(path, store) and not any(_inside(root, store) for root in self.roots):
                where = f"{path} is" if path == store else f"{path} is inside {store},"
                return AccessDenied(
                    f"{where} a store of credentials or system files; it is never mined unless mining.roots names it",
                    help=f'add "{store}" to mining.roots in config.toml if you really mean it',
                )
        if not any(_inside(path, root) for root in self.roots):
            listed = ", ".join(str(root) for root in self.roots) or "(none)"
            return AccessDenied(
                f"{path} is outside the folders mining may read ({listed})",
                help="add a folder to mining.roots in config.toml (the default is your home directory)",
            )
        return None
