"""Real questions over a real repository's history: does each ranking find the commit that made the change?

Mines the history of a clone of [sqlite-utils](https://github.com/simonw/sqlite-utils) (1,199 commits at
`56dd097`, through the `git` connector: one drawer per commit's message and changed files, the way a user mines a
project's history), embeds it with the builtin model, then asks the questions below — the kind a developer asks an
agent's memory about a project's past ("when did we…", "where was … fixed"), written for this benchmark in their own
words rather than the commit's — and records hit@1, hit@5 and hit@10 per ranking: a question is a hit at k when one
of its first k hits is a drawer of a commit that made the change (some changes took several commits: any counts).

    git clone https://github.com/simonw/sqlite-utils && git -C sqlite-utils checkout 56dd097
    python -m bench.history_questions --repo sqlite-utils [--rankings lexical,semantic,hybrid] [--write]

Every answer is checked to be a commit of the repository before anything is mined.
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from bench.common import add_overrides, apply_overrides, command_line, machine, open_palace, write_section
from bench.questions import RANKINGS, Run, ask, mine, show, table
from memcastle.model.search import Hit

TIP = "56dd097"
# (question, the commits that made the change: short ids, `|` between several)
QUESTIONS: tuple[tuple[str, str], ...] = (
    ("when did the Database constructor start refusing connections opened in autocommit mode", "bcd9a26"),
    ("transform lost CHECK constraints on the table", "2303b80"),
    ("changing the schema of a table that a view depends on used to fail", "f726ea4"),
    ("store binary blobs given as base64 inside JSON input", "1a61a6d"),
    ("turn nested JSON objects into separate columns when inserting", "f67327a"),
    ("decorator to make a Python function callable from SQL", "4824775"),
    ("keep a cached row count for each table maintained by triggers", "1cad7fa|94b5023"),
    ("inserting with a primary key and ignore=True did not skip existing rows", "221774f"),
    ("detecting the full-text index picked a table with a similar name", "b8af3b9"),
    ("print the schema of the temporary in-memory database built from CSV files", "933be66"),
    ("pick a different tokenizer like porter when building the search index", "57e4eb8"),
    ("read the SQL of a query from standard input instead of an argument", "619770b"),
    ("offset without a limit produced invalid SQL", "43d5d33"),
    ("foreign keys that span more than one column", "9a39365|f10459c|7d43fd5"),
    ("unicode characters were escaped in the JSON the command line prints", "815b6a7"),
    ("boolean and null default values became quoted strings after transform", "a4acc39"),
    ("two columns with the same name in a select came back as one", "07b603e"),
    ("explicit methods to start, commit and roll back a transaction", "788c393"),
    ("AUTOINCREMENT disappeared when a table was rebuilt", "2b52b5e"),
    ("command to add several foreign key constraints to existing tables at once", "3cc1944"),
    ("extracting a lookup table duplicated rows that contain NULL", "8572d1e"),
    ("empty strings should become NULL when a text column is converted to integer", "e4935e0"),
    ("a table whose foreign key points at itself could not be created from the CLI", "39ef137"),
    ("writes run through execute were not committed", "f7ff3e2"),
    ("a write that failed left a transaction open behind it", "7d86118"),
    ("show progress while extracting columns into another table", "5c4d58d"),
    ("add columns that are missing from the table automatically on insert", "eff52023"),
    ("create an index that enforces uniqueness", "e7ffbcd"),
    ("say what is wrong with malformed JSON input instead of a bare traceback", "e4ed372"),
    ("optimize leaves junk rows behind in the full-text docsize table", "3e87500"),
    ("a task runner file for running the tests and linters", "3ddacb7"),
    ("listing migrations should not write to the database", "30cc95c"),
)


def of_commit(hit: Hit, expected: str) -> bool:
    uri = hit.drawer.source.uri or ""
    return any(uri.startswith(f"git:{sha}") for sha in expected.split("|"))


def check(repo: Path) -> None:
    """Refuse a repository that does not hold every answer (another project, a shallow clone, an older tip)."""
    shas = [sha for _, expected in QUESTIONS for sha in expected.split("|")]
    git = ["git", "-C", str(repo), "cat-file", "-e"]
    missing = [sha for sha in shas if subprocess.run([*git, f"{sha}^{{commit}}"], capture_output=True).returncode]
    if missing:
        raise SystemExit(f"{repo} does not hold the commits {', '.join(missing)}: clone sqlite-utils (see --help)")


def markdown(runs: Sequence[Run], ingest: str) -> str:
    lines = [
        "## History questions over a real repository",
        "",
        f"Command: `{command_line()}`  ",
        f"Data: the history of sqlite-utils at `{TIP}`, mined with the `git` connector; {ingest}. {len(QUESTIONS)} "
        "questions written for this benchmark in a developer's words, not the commits' (`bench/history_questions.py`); "
        "a hit is a drawer of a commit that made the change.",
        "",
        *table(runs, QUESTIONS),
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", type=Path, required=True, help="a clone of sqlite-utils holding commit " + TIP)
    parser.add_argument("--rankings", default=",".join(RANKINGS))
    parser.add_argument("--write", action="store_true")
    add_overrides(parser)
    args = parser.parse_args(argv)
    apply_overrides(parser, args)
    repo = args.repo.resolve()
    check(repo)
    with tempfile.TemporaryDirectory(prefix="memcastle-history-questions-") as work:
        palace = open_palace(Path(work), **{"mining.roots": [str(repo)], "embeddings.provider": "builtin"})
        try:
            ingest = mine(palace, "git", str(repo), "history")
            runs = [ask(palace, ranking, QUESTIONS, "history", of_commit) for ranking in args.rankings.split(",")]
        finally:
            palace.stop()
    show(runs, QUESTIONS)
    print(f"{ingest}; {machine()}")
    if args.write:
        write_section("history-questions", markdown(runs, ingest))


if __name__ == "__main__":
    main()
