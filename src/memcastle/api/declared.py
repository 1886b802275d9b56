"""The REST fields of the declared search options (`memcastle.model.options`), as cog writes them into
`memcastle.api.schemas` — `cog -r src/memcastle/api/schemas.py`; `cog --check` in CI fails when an option was
declared without it. Generated source, not built at run time, so mypy and a reader see every field."""

from __future__ import annotations

import json

from memcastle.model.options import Declared, declared_options
from memcastle.model.requests import SearchRequest

# Each kind as the body types it (the names of `memcastle.api.schemas`).
TYPES = {"name": "Name", "tags": "Tags", "instant": "Instant", "flag": "bool"}


def option_fields(scope: bool) -> str:
    """The field lines of the options that say where and when (`scope`), or of the others."""
    lines = [_field(d) for d in declared_options(SearchRequest) if d.option.scope == scope]
    return "    # fmt: off\n" + "".join(f"    {line}\n" for line in lines) + "    # fmt: on\n"


def _field(declared: Declared) -> str:
    option = declared.option
    if option.kind == "count":
        assert option.bounds is not None, declared.name
        kind = f"Integer({option.bounds[0]}, {option.bounds[1]})"
    elif option.kind == "choice":
        kind = "Literal[" + ", ".join(f'"{c}"' for c in option.choices) + "]"
    else:
        kind = TYPES[option.kind]
    if declared.default is None:
        kind += " | None"
    default = "default_factory=list" if option.kind == "tags" else f"default={json.dumps(declared.default)}"
    default = default.replace("null", "None").replace("false", "False").replace("true", "True")
    alias = f', alias="{declared.wire}"' if declared.wire != declared.name else ""
    ignore = "  # type: ignore[valid-type]" if option.kind == "count" else ""
    return (
        f"{declared.name}: {kind} = Field({ignore}\n"
        f"        {default}{alias}, description={json.dumps(option.help, ensure_ascii=False)})"
    )
