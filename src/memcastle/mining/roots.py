"""What may be mined: only paths inside the configured roots, and never a known secret store unless a root names it.

The default root is the user's home directory: their projects, notes and agent logs can be mined with no
configuration at all (the README's first session does exactly that), while the system (`/etc`, `/proc`, …) and the
places that hold credentials (`~/.ssh`, `~/.aws`, …) stay out, even when a symlink points into them. A locator is
checked when it is asked for, so a refused one is an answer to the request, not a job that "completes" empty.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from memcastle.errors import AccessDenied, InvalidRequest, NotFound

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
    """The folders mining may read, checked against every locator that names a local path."""

    def __init__(self, roots: Sequence[str | Path] = DEFAULT_ROOTS) -> None:
        self.roots = tuple(_resolved(root) for root in roots)
        self._secrets = tuple(_resolved(store) for store in SECRET_STORES)

    def check(self, locator: str) -> None:
        """Refuse a locator outside every root, inside a secret store no root names, or naming nothing."""
        if not locator.strip() or "://" in locator:
            return  # a connector's default location, or not a local path
        try:
            path = _resolved(locator)
        except RuntimeError:  # `~name` for a user this machine does not have
            raise InvalidRequest(f"{locator!r} names the home folder of an unknown user", field="locator") from None
        for store in self._secrets:
            if _inside(path, store) and not any(_inside(root, store) for root in self.roots):
                raise AccessDenied(
                    f"{path} is inside {store}, a store of credentials or system files; it is never mined unless "
                    "mining.roots names it",
                    help=f'add "{store}" to mining.roots in config.toml if you really mean it',
                )
        if not any(_inside(path, root) for root in self.roots):
            listed = ", ".join(str(root) for root in self.roots) or "(none)"
            raise AccessDenied(
                f"{path} is outside the folders mining may read ({listed})",
                help="add a folder to mining.roots in config.toml (the default is your home directory)",
            )
        if not path.exists():
            raise NotFound(f"{locator} does not exist ({path})", help="check the path")
