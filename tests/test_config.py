"""Settings: defaults < config.toml < MEMCASTLE_* < flags, each value's origin, and errors that say where."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import click
import pytest

import memcastle.cli.main
from memcastle.app import build
from memcastle.config import SETTINGS, SPEC_BY_KEY, load_settings
from memcastle.errors import ConfigError

DOCS = Path(__file__).resolve().parents[1] / "docs"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    return tmp_path / "config.toml"


# --- precedence and origins -----------------------------------------------------------------------


def test_defaults_apply_when_nothing_is_configured(config_file: Path) -> None:
    write(config_file, "")
    loaded = load_settings(env={}, config_file=config_file)
    for spec in SETTINGS:
        assert loaded.origin(spec.key) == "default"
    assert loaded.jobs.workers == SPEC_BY_KEY["jobs.workers"].default
    assert loaded.server.port == 8420


def test_each_layer_overrides_the_one_below_and_records_its_origin(config_file: Path) -> None:
    write(config_file, "[jobs]\nworkers = 3\n[server]\nport = 9001\n")
    env = {"MEMCASTLE_JOBS_WORKERS": "4"}

    from_file = load_settings(env={}, config_file=config_file)
    assert from_file.jobs.workers == 3
    assert from_file.origin("jobs.workers") == f"file {config_file}"

    from_env = load_settings(env=env, config_file=config_file)
    assert from_env.jobs.workers == 4
    assert from_env.origin("jobs.workers") == "env MEMCASTLE_JOBS_WORKERS"
    assert from_env.server.port == 9001, "a key the environment does not set keeps the file's value"
    assert from_env.origin("server.port") == f"file {config_file}"

    from_flag = load_settings(flags={"jobs.workers": 5}, env=env, config_file=config_file)
    assert from_flag.jobs.workers == 5
    assert from_flag.origin("jobs.workers") == "flag"
    assert from_flag.origin("mode") == "default"


def test_none_flags_are_ignored(config_file: Path) -> None:
    write(config_file, 'mode = "read_only"\n')
    loaded = load_settings(flags={"mode": None, "palace": None}, env={}, config_file=config_file)
    assert loaded.mode == "read_only"
    assert loaded.origin("mode") == f"file {config_file}"


def test_default_config_file_is_read_from_xdg_config_home(xdg_home: Any) -> None:
    write(xdg_home.config_file, "[jobs]\nworkers = 7\n")
    loaded = load_settings(env={})
    assert loaded.config_file == xdg_home.config_file
    assert loaded.jobs.workers == 7


def test_memcastle_config_variable_selects_the_file(tmp_path: Path) -> None:
    chosen = write(tmp_path / "elsewhere.toml", "[server]\nport = 8999\n")
    loaded = load_settings(env={"MEMCASTLE_CONFIG": str(chosen)})
    assert loaded.server.port == 8999
    assert loaded.origin("server.port") == f"file {chosen}"


def test_palace_flag_selects_the_palace_directory(tmp_path: Path) -> None:
    loaded = load_settings(flags={"palace": str(tmp_path / "mine")}, env={})
    assert loaded.palace == tmp_path / "mine"
    assert loaded.origin("palace") == "flag"


def test_environment_values_are_parsed_by_type() -> None:
    loaded = load_settings(
        env={
            "MEMCASTLE_JOBS_DRAIN_SECONDS": "2.5",
            "MEMCASTLE_EMBEDDINGS_COMMAND": '["embed", "--fast"]',
            "MEMCASTLE_SERVER_PORT": "0",
            "MEMCASTLE_MODE": "read_only",
        }
    )
    assert loaded.jobs.drain_seconds == 2.5
    assert loaded.embeddings.command == ["embed", "--fast"]
    assert loaded.server.port == 0
    assert loaded.mode == "read_only"


SECRET_KEYS = [spec.key for spec in SETTINGS if spec.secret]


@pytest.mark.parametrize("key", SECRET_KEYS)
def test_secrets_are_masked_in_the_description(key: str) -> None:
    variable = SPEC_BY_KEY[key].env_var
    loaded = load_settings(env={variable: "s3cret"})
    rows = {row["key"]: row for row in loaded.describe()}
    assert rows[key]["value"] == "********"
    assert rows[key]["origin"] == f"env {variable}"
    assert "s3cret" not in repr(loaded.describe())


def test_structured_tables_are_kept_for_their_own_validators(config_file: Path) -> None:
    write(config_file, '[preferences]\ndefault = "high"\n\n[preferences.sources.notes]\nlevel = "low"\n')
    loaded = load_settings(env={}, config_file=config_file)
    assert loaded.tables["preferences"].value["sources"]["notes"]["level"] == "low"
    assert loaded.tables["preferences"].file == str(config_file)


# --- errors say where -----------------------------------------------------------------------------


def test_malformed_toml_names_the_file_and_line(config_file: Path) -> None:
    write(config_file, "[jobs]\nworkers = 2\nthis is not toml\n")
    with pytest.raises(ConfigError) as error:
        load_settings(env={}, config_file=config_file)
    assert error.value.file == str(config_file)
    assert error.value.line == 3
    assert f"{config_file}:3" in str(error.value)


def test_unknown_key_names_the_key_and_its_line(config_file: Path) -> None:
    write(config_file, 'mode = "full"\n\n[jobs]\nworkers = 2\nwrokers = 3\n')
    with pytest.raises(ConfigError) as error:
        load_settings(env={}, config_file=config_file)
    assert error.value.key == "jobs.wrokers"
    assert error.value.line == 5
    assert "jobs.wrokers" in str(error.value) and f"{config_file}:5" in str(error.value)
    assert "jobs.workers" in str(error.value), "the message lists the known keys of the section"


def test_unknown_top_level_key_is_refused(config_file: Path) -> None:
    write(config_file, 'colour = "blue"\n')
    with pytest.raises(ConfigError) as error:
        load_settings(env={}, config_file=config_file)
    assert error.value.key == "colour"
    assert error.value.line == 1


@pytest.mark.parametrize(
    ("text", "key", "line"),
    [
        ('[jobs]\nworkers = "two"\n', "jobs.workers", 2),  # type
        ("[jobs]\nworkers = 2.5\n", "jobs.workers", 2),  # not an integer
        ("[jobs]\nworkers = 0\n", "jobs.workers", 2),  # below minimum
        ("[server]\nport = 70000\n", "server.port", 2),  # above maximum
        ('mode = "loud"\n', "mode", 1),  # not a choice
        ('[embeddings]\nprovider = "magic"\n', "embeddings.provider", 2),  # not a choice
        ('[embeddings]\ncommand = "embed --fast"\n', "embeddings.command", 2),  # not a list
        ("[server]\nhost = 127\n", "server.host", 2),  # not a string
        ('[embeddings]\ncommand = ["run", 3]\n', "embeddings.command", 2),  # not a list of strings
        ("[jobs]\ndrain_seconds = true\n", "jobs.drain_seconds", 2),  # a boolean is not a number
    ],
)
def test_bad_value_in_file_names_the_key_file_and_line(config_file: Path, text: str, key: str, line: int) -> None:
    write(config_file, text)
    with pytest.raises(ConfigError) as error:
        load_settings(env={}, config_file=config_file)
    assert error.value.key == key
    assert error.value.file == str(config_file)
    assert error.value.line == line
    assert key in str(error.value)


@pytest.mark.parametrize(
    ("variable", "raw"),
    [
        ("MEMCASTLE_SERVER_PORT", "http"),
        ("MEMCASTLE_SERVER_PORT", "-1"),
        ("MEMCASTLE_MODE", "loud"),
        ("MEMCASTLE_EMBEDDINGS_COMMAND", "embed"),
        ("MEMCASTLE_JOBS_DRAIN_SECONDS", "soon"),
        ("MEMCASTLE_JOBS_WORKERS", "2.5"),
    ],
)
def test_bad_environment_value_names_the_variable(variable: str, raw: str) -> None:
    with pytest.raises(ConfigError) as error:
        load_settings(env={variable: raw})
    assert variable in str(error.value)


def test_unknown_memcastle_variable_is_refused_by_name() -> None:
    with pytest.raises(ConfigError) as error:
        load_settings(env={"MEMCASTLE_JOBS_WROKERS": "2"})
    assert "MEMCASTLE_JOBS_WROKERS" in str(error.value)


def test_variables_without_the_prefix_are_not_settings() -> None:
    loaded = load_settings(env={"JOBS_WORKERS": "9", "MEMCASTLEX": "1"})
    assert loaded.jobs.workers == 2


@pytest.mark.parametrize(("key", "value"), [("jobs.workers", 0), ("mode", "loud"), ("server.port", "x")])
def test_bad_flag_names_the_key(key: str, value: object) -> None:
    with pytest.raises(ConfigError) as error:
        load_settings(flags={key: value}, env={})
    assert key in str(error.value)


def test_unknown_flag_is_refused() -> None:
    with pytest.raises(ConfigError) as error:
        load_settings(flags={"jobs.wrokers": 2}, env={})
    assert "jobs.wrokers" in str(error.value)


def test_explicit_config_file_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    with pytest.raises(ConfigError) as error:
        load_settings(env={}, config_file=missing)
    assert str(missing) in str(error.value)
    with pytest.raises(ConfigError):
        load_settings(env={"MEMCASTLE_CONFIG": str(missing)})


def test_config_file_that_is_not_utf8_is_an_error_naming_it(config_file: Path) -> None:
    config_file.write_bytes(b'mode = "\xff\xfe"\n')
    with pytest.raises(ConfigError) as error:
        load_settings(env={}, config_file=config_file)
    assert str(config_file) in str(error.value)


# --- everything is documented ---------------------------------------------------------------------


def _doc(name: str) -> str:
    path = DOCS / name
    if not path.is_file():
        pytest.fail(f"docs/{name} does not exist; it must document every setting/command")
    return path.read_text(encoding="utf-8")


def test_every_setting_is_documented_in_configuration_md() -> None:
    text = _doc("configuration.md")
    missing = [spec.key for spec in SETTINGS if not re.search(rf"(?<![\w.]){re.escape(spec.key)}(?![\w.])", text)]
    assert not missing, f"docs/configuration.md does not mention these settings: {', '.join(missing)}"


def _command_paths(command: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command's path, through click's own listing (the top-level group loads its modules on demand)."""
    if isinstance(command, click.Group):
        context = click.Context(command)
        paths: list[tuple[str, ...]] = []
        for name in command.list_commands(context):
            sub = command.get_command(context, name)
            if sub is not None and not sub.hidden:
                paths.extend(_command_paths(sub, (*prefix, name)))
        return paths
    return [prefix]


def test_command_walk_finds_nested_commands() -> None:
    paths = _command_paths(memcastle.cli.main.app)
    assert ("serve",) in paths and ("drawer", "show") in paths and ("job", "cancel") in paths


def test_every_cli_command_is_documented_in_cli_md() -> None:
    """Documented = `memcastle <command>` appears, or a Markdown heading names the command."""
    text = _doc("cli.md")
    headings = "\n".join(line for line in text.splitlines() if line.lstrip().startswith("#"))
    missing = []
    for path in _command_paths(memcastle.cli.main.app):
        words = r"\s+".join(re.escape(part) for part in path)
        usage = re.search(rf"memcastle\s+(?:--?[\w-]+(?:[ =]\S+)?\s+)*{words}(?![\w-])", text)
        heading = re.search(rf"(?<![\w-]){words}(?![\w-])", headings)
        if not (usage or heading):
            missing.append(" ".join(path))
    assert not missing, f"docs/cli.md does not document these commands: {', '.join(missing)}"


# --- every malformed configuration names its line -------------------------------------------------------------

MALFORMED: dict[str, tuple[str, str, int]] = {
    # name: (text, key or message fragment, the line it must name)
    "a key inside an inline table": ('mode = "full"\nserver = { port = "x" }\n', "server.port", 2),
    "a dotted key": ('\n\nserver.port = "x"\n', "server.port", 3),
    "a quoted table and key": ('\n["server"]\n"port" = "x"\n', "server.port", 3),
    "a nested inline table": ('[palace]\npreferences = { sources = { notes = { level = "x" } } }\n', "level", 2),
    "a miner without a name": ('# miners\n[[miners]]\nconnector = "notes"\nlocator = "/tmp"\n', "miners[0].name", 2),
    "the second miner's every": (
        '[[miners]]\nname = "a"\nconnector = "notes"\nlocator = "/tmp"\nevery = "1h"\n\n'
        '[[miners]]\nname = "b"\nconnector = "notes"\nlocator = "/tmp"\nevery = "1s"\n',
        "miners[1].every",
        11,
    ),
    "a duplicate miner name": (
        '[[miners]]\nname = "a"\nconnector = "notes"\nlocator = "/t"\n[[miners]]\nname = "a"\nconnector = "notes"\n'
        'locator = "/t"\n',
        "miners[1].name",
        6,
    ),
    "miners as a string": ('mode = "full"\nminers = "x"\n', "miners", 2),
    "miners as a table": ('mode = "full"\n[miners]\nname = "a"\n', "miners", 2),
    "a miner that is not a table": ('mode = "full"\nminers = [\n  "x",\n]\n', "miners[0]", 3),
    "an inline miner": (
        'miners = [\n  {name = "a", connector = "notes", locator = "/tmp"},\n'
        '  {name = "b", connector = "notes", locator = "/tmp", every = "1s"},\n]\n',
        "miners[1].every",
        3,
    ),
    "a miner's unknown connector": ('\n[[miners]]\nname = "a"\nconnector = "nope"\nlocator = "/tmp"\n', "connector", 4),
    "a store url": ('\n[store]\nurl = "mysql://x"\n', "store.url", 3),
    "a criterion deep in an array of tables": (
        '[[preferences.sources.notes.criteria]]\npath = "a"\nequals = "b"\nlevel = "low"\n\n'
        '[[preferences.sources.notes.criteria]]\npath = ""\nequals = "c"\nlevel = "low"\n',
        "criteria[1].path",
        7,
    ),
    "a value after a multi-line string": (
        '[palace]\npath = """\n/tmp\n/x\n"""\n[server]\nport = "x"\n',
        "server.port",
        7,
    ),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_every_malformed_configuration_names_its_file_and_line(config_file: Path, tmp_path: Path, case: str) -> None:
    """tomllib reports no positions; errors found after parsing used to lose the line in 7 of 33 such files."""
    text, fragment, line = MALFORMED[case]
    config_file.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as refused:
        settings = load_settings(config_file=config_file, env={}, flags={"palace": str(tmp_path / "palace")})
        build(settings).stop()
    assert refused.value.file == str(config_file), refused.value.message
    assert refused.value.line == line, refused.value.message
    assert fragment in refused.value.message
    assert f"{config_file}:{line}" in refused.value.message
    assert refused.value.message.count("key '") <= 1  # said once, not "key 'x': key 'x': …"


def test_bytes_that_are_not_utf8_are_named_by_line(config_file: Path) -> None:
    config_file.write_bytes(b'mode = "full"\n\n# caf\xe9\n')
    with pytest.raises(ConfigError) as refused:
        load_settings(config_file=config_file, env={})
    assert refused.value.line == 3 and "not valid UTF-8" in refused.value.message


@pytest.mark.parametrize("timeout", [math.inf, 0, -1, True, "30"])
@pytest.mark.parametrize("kind", ["command", "http"])
def test_embedding_and_extraction_providers_refuse_the_same_timeouts(kind: str, timeout: Any) -> None:
    """One check for both sections' command and HTTP providers (an infinite timeout was let through for embeddings)."""
    from memcastle.knowledge.extraction import build_extraction_provider
    from memcastle.search.embeddings import build_provider

    config = {"provider": kind, "model": "m", "command": ["true"], "url": "http://127.0.0.1:9", "timeout": timeout}
    for section, builder in (("embeddings", build_provider), ("extraction", build_extraction_provider)):
        with pytest.raises(ConfigError) as refused:
            builder(config)
        assert refused.value.key == f"{section}.timeout"
