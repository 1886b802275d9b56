"""Named miners from `[[miners]]` in the config file: a connector + locator + options + wing to mine again."""

from __future__ import annotations

from memcastle.config import RawTable
from memcastle.config.arrays import Refuse, array_entries
from memcastle.errors import ConfigError
from memcastle.model.mining import DEFAULT_DEBOUNCE, MAX_DEBOUNCE, MIN_EVERY, MinerSpec, check_triggers, parse_duration

_KEYS = {
    "name",
    "connector",
    "locator",
    "options",
    "wing",
    "full",
    "watch",
    "debounce",
    "every",
    "poll",
    "webhook",
    "secret_env",
}


def load_miners(table: RawTable | None) -> dict[str, MinerSpec]:
    """Validate `[[miners]]`; every error names the file, the line where it can, and the key."""
    if table is None:
        return {}
    miners: dict[str, MinerSpec] = {}
    for where, entry, fail in array_entries(table, "miners", _KEYS):
        for key in ("name", "connector", "locator"):
            value = entry.get(key)
            if not isinstance(value, str) or (key != "locator" and not value.strip()):
                raise fail(f"{where}.{key}", "required, a non-empty string")
        options = entry.get("options", {})
        if not isinstance(options, dict) or not all(isinstance(v, str) for v in options.values()):
            raise fail(f"{where}.options", "must be a table of strings")
        wing = entry.get("wing")
        if wing is not None and (not isinstance(wing, str) or not wing.strip()):
            raise fail(f"{where}.wing", "must be a non-empty string")
        full = entry.get("full", False)
        if not isinstance(full, bool):
            raise fail(f"{where}.full", "must be true or false")
        watch = entry.get("watch", False)
        if not isinstance(watch, bool):
            raise fail(f"{where}.watch", "must be true or false")
        try:
            debounce = parse_duration(entry.get("debounce", DEFAULT_DEBOUNCE))
            if debounce > MAX_DEBOUNCE:
                raise ValueError(f"at most {MAX_DEBOUNCE:.0f} s")
        except ValueError as exc:
            raise fail(f"{where}.debounce", str(exc)) from None
        every = entry.get("every")
        if every is not None:
            try:
                every = parse_duration(every)
                if every < MIN_EVERY:
                    raise ValueError(f"at least {MIN_EVERY:.0f} s (use watch = true to mine on every change)")
            except ValueError as exc:
                raise fail(f"{where}.every", str(exc)) from None

        def trigger_fail(key: str, message: str, where: str = where, fail: Refuse = fail) -> ConfigError:
            return fail(f"{where}.{key}", message)

        poll, webhook, secret_env = check_triggers(
            entry.get("poll"), entry.get("webhook"), entry.get("secret_env"), trigger_fail
        )
        name = entry["name"].strip()
        if name in miners:
            raise fail(f"{where}.name", f"duplicate miner name {name!r}")
        miners[name] = MinerSpec(
            name=name,
            connector=entry["connector"].strip(),
            locator=entry["locator"],
            options=dict(options),
            wing=wing,
            full=full,
            watch=watch,
            debounce=debounce,
            every=every,
            poll=poll,
            webhook=webhook,
            secret_env=secret_env,
        )
    return miners
