"""A built palace served on a real loopback socket from a thread of the test process (`daemon.ServedPalace`): what
a test whose subject is not the daemon process uses instead of a `memcastle serve` subprocess.

It has the helpers of `live_daemon.Daemon` — `address`, `http()`, `cli()`, `palace`, `home`, `env`, `kill()` — and is
registered in its home's daemon registry under this process's pid, so the command line run as a subprocess finds it
as it finds a daemon. What only a process has (`proc`, `pid`, its log, signals) is not there: a test that needs it is
about the process, and uses `launch_daemon` (the `daemon_process` fixtures).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from live_daemon import XdgHome, palace_cli

from memcastle import __version__
from memcastle.app import Palace, build
from memcastle.config import load_settings
from memcastle.daemon import ServedPalace, file_spooled_checkpoints
from memcastle.runtime.daemons import DaemonEntry, registry_file, remove_entry, write_entry

# A served palace's jobs are drained for this long when it stops (a killed subprocess waited for none).
DRAIN_SECONDS = "2"


@dataclass
class Served:
    """A palace built from its home's configuration and environment, started and served."""

    palace: Path
    home: XdgHome
    built: Palace
    server: ServedPalace
    entry: DaemonEntry | None = None  # its registry entry
    env: dict[str, str] = field(default_factory=dict)
    stopped: bool = False

    @property
    def address(self) -> str:
        return self.server.address

    @property
    def pid(self) -> int:
        """The pid its registry entry names: this test process's."""
        return os.getpid()

    @property
    def registry_path(self) -> Path:
        return registry_file(self.home.state_dir, self.palace)

    def http(self, timeout: float = 60.0) -> httpx.Client:
        return httpx.Client(base_url=self.address, timeout=timeout, trust_env=False)

    def cli(
        self, *args: str, input: str | None = None, extra_env: Mapping[str, str] | None = None, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        """`memcastle --palace P ARGS` against this palace, run in this process (`cli_in_process`)."""
        return palace_cli(self, args, input=input, extra_env=extra_env, cwd=cwd, run=cli_in_process)

    def cli_process(
        self, *args: str, input: str | None = None, extra_env: Mapping[str, str] | None = None, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        """The same, as a subprocess: for a test whose subject is the console entry itself."""
        return palace_cli(self, args, input=input, extra_env=extra_env, cwd=cwd)

    def kill(self) -> None:
        """Stop serving, drain and close the palace, leave the registry (as a daemon's clean stop does)."""
        if self.stopped:
            return
        self.stopped = True
        try:
            self.server.stop()
        finally:
            self.built.stop()
            remove_entry(self.home.state_dir, self.palace)

    close = kill


def serve_palace(palace: Path, home: XdgHome, *, extra_env: Mapping[str, str] | None = None) -> Served:
    """Build the palace as `memcastle --palace P serve` would in `home` with `extra_env`, start it and serve it on a
    free loopback port; registered, and the checkpoints spooled while nothing answered are filed (as at a start)."""
    env = home.env({"MEMCASTLE_EMBEDDINGS_PROVIDER": "none", "MEMCASTLE_JOBS_DRAIN_SECONDS": DRAIN_SECONDS,
                    **(extra_env or {})})  # fmt: skip
    config = home.config_file if home.config_file.exists() else None
    settings = load_settings(flags={"palace": str(palace)}, env=env, config_file=config)
    built = build(settings)
    server = ServedPalace(built)
    try:
        built.start()
        entry = write_entry(home.state_dir, palace, server.address, __version__)
        built.services.runtime.serving(pid=entry.pid, address=server.address, started_at=entry.started_at)
        file_spooled_checkpoints(built, home.state_dir)
        server.start()
    except BaseException:
        built.stop()
        raise
    return Served(palace=palace, home=home, built=built, server=server, entry=entry, env=env)


def cli_in_process(
    args: Sequence[str], *, env: Mapping[str, str], input: str | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """`memcastle ARGS` through the console entry's own `run` in this process — its output captured as a pipe's
    (so it answers in JSON), its exit code as the process's — with `env` as the environment and `cwd` as the working
    folder for the call. What it costs is the command's work, not an interpreter's start (~0.3 CPU-s)."""
    from click.testing import CliRunner

    from memcastle.cli.main import run

    changed = {key: value for key, value in env.items() if os.environ.get(key) != value}
    gone = [key for key in os.environ if key.startswith(("MEMCASTLE_", "XDG_")) and key not in env]
    runner = CliRunner()
    before = Path.cwd()
    argv = sys.argv
    code = 0
    with runner.isolation(input=input, env={**changed, **dict.fromkeys(gone)}) as (out, err, _):
        sys.argv = ["memcastle", *args]
        try:
            if cwd is not None:
                os.chdir(cwd)
            run()
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
        finally:
            sys.argv = argv
            os.chdir(before)
            sys.stdout.flush()
            sys.stderr.flush()
        stdout, stderr = out.getvalue().decode("utf-8", "replace"), err.getvalue().decode("utf-8", "replace")
    return subprocess.CompletedProcess(["memcastle", *args], code, stdout, stderr)
