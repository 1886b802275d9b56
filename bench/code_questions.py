"""Real questions over this machine's standard library: does each ranking find the file that implements the answer?

Mines the running interpreter's standard library (its `.py` files and docs, through the `directory` connector, the
way a user mines a project), embeds it with the builtin model, then asks the questions below — the kind a developer
asks an agent's memory about code, written for this benchmark — and records hit@1, hit@5 and hit@10 per ranking:
a question is a hit at k when one of its first k hits is a drawer of the file that implements the answer (a test,
a doc or another module that merely mentions it does not count).

    python -m bench.code_questions [--rankings lexical,semantic,hybrid] [--exclude test,idlelib,…]
                                   [--keep DIR | --reuse DIR] [--write]

`--exclude` leaves top-level folders of the standard library out (a copy of the rest is mined): the whole of it takes
most of an hour to embed on two cores, most of that its `test` folder. `--keep DIR` keeps the mined, embedded
palace; `--reuse DIR` asks a kept one. `--write` replaces the section of bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sysconfig
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from bench.common import add_overrides, apply_overrides, command_line, machine, open_palace, write_section
from bench.questions import RANKINGS, Run, ask, mine, per_question, show, table
from memcastle.model.search import Hit

# (question, the file under the standard library that implements the answer)
QUESTIONS: tuple[tuple[str, str], ...] = (
    ("parse a date and time string in ISO 8601 format", "datetime.py"),
    ("compare two lists of lines and produce a unified diff", "difflib.py"),
    ("how are infinity and NaN floats written when encoding JSON", "json/encoder.py"),
    ("read rows from a CSV file with a custom delimiter and quote character", "csv.py"),
    ("send an email through an SMTP server using STARTTLS", "smtplib.py"),
    ("find the closest matching words to a misspelled word", "difflib.py"),
    ("wrap a paragraph of text to a given line width", "textwrap.py"),
    ("command line option parser with subcommands and help messages", "argparse.py"),
    ("compress data into a gzip file", "gzip.py"),
    ("walk a directory tree top down yielding directories and files", "os.py"),
    ("copy a whole directory tree recursively while ignoring some patterns", "shutil.py"),
    ("percent-encode a query string for a URL", "urllib/parse.py"),
    ("priority queue implemented with a binary heap", "heapq.py"),
    ("least recently used cache decorator for a function", "functools.py"),
    ("factory for tuple subclasses with named fields", "collections/__init__.py"),
    ("generate a random UUID version 4", "uuid.py"),
    ("match file names against shell-style wildcard patterns", "fnmatch.py"),
    ("pretty-print nested dictionaries and lists", "pprint.py"),
    ("insert an item into a sorted list keeping it sorted", "bisect.py"),
    ("read an INI configuration file with sections and keys", "configparser.py"),
    ("serialize Python objects to bytes with a protocol version", "pickle.py"),
    ("simple HTTP server that serves files from the current directory", "http/server.py"),
    ("temporary file that is deleted when it is closed", "tempfile.py"),
    ("median and standard deviation of a list of numbers", "statistics.py"),
    ("encode bytes as base64 text", "base64.py"),
    ("run a child process and capture its output with a timeout", "subprocess.py"),
    ("split a shell command line into tokens respecting quotes", "shlex.py"),
    ("seconds since the epoch from a UTC time tuple", "calendar.py"),
)
BUILT = "code-questions-built.txt"  # how a kept palace was built, read back by --reuse


def stdlib() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def file_of(uri: str | None, root: Path) -> str | None:
    """The drawer's file relative to the standard library (`json/encoder.py`), or None."""
    if not uri:
        return None
    path = uri.removeprefix("file://")
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None


def of_file(root: Path) -> Callable[[Hit, str], bool]:
    return lambda hit, expected: file_of(hit.drawer.source.uri, root) == expected


def markdown(runs: Sequence[Run], ingest: str, excluded: Sequence[str]) -> str:
    left_out = f" without its top-level {', '.join(f'`{e}`' for e in excluded)}" if excluded else ""
    lines = [
        "## Code questions over the standard library",
        "",
        f"Command: `{command_line()}`  ",
        f"Data: this interpreter's standard library (`{stdlib()}`){left_out}, mined with the `directory` connector; "
        f"{ingest}. "
        f"{len(QUESTIONS)} questions written for this benchmark (`bench/code_questions.py`); a hit is a drawer of the "
        "file that implements the answer.",
        "",
    ]
    lines += table(runs, QUESTIONS)
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rankings", default=",".join(RANKINGS))
    parser.add_argument("--exclude", default="", help="top-level folders of the standard library to leave out")
    parser.add_argument("--keep", type=Path)
    parser.add_argument("--reuse", type=Path)
    parser.add_argument("--write", action="store_true")
    parser.add_argument(
        "--per-question", type=Path, metavar="FILE", help="each question's hit@5/10 and MRR (JSON), for bench.paired"
    )
    add_overrides(parser)
    args = parser.parse_args(argv)
    apply_overrides(parser, args)
    work = Path(tempfile.mkdtemp(prefix="memcastle-code-questions-"))
    root = stdlib()
    excluded = [name for name in args.exclude.split(",") if name]
    if excluded:
        root = work / "stdlib"
        shutil.copytree(stdlib(), root, ignore=lambda folder, names: excluded if Path(folder) == stdlib() else [])
    try:
        if args.reuse:
            shutil.copytree(args.reuse, work / "palace")
        palace = open_palace(work / "palace", **{"mining.roots": [str(root)], "embeddings.provider": "builtin"})
        try:
            if args.reuse:
                built = args.reuse / BUILT
                ingest = built.read_text(encoding="utf-8").strip() if built.exists() else "a kept palace"
            else:
                ingest = f"{mine(palace, 'directory', str(root), 'stdlib')} (`{command_line()}`)"
            runs = [ask(palace, ranking, QUESTIONS, "stdlib", of_file(root)) for ranking in args.rankings.split(",")]
        finally:
            palace.stop()
        if args.keep:
            shutil.copytree(work / "palace", args.keep, dirs_exist_ok=True)
            (args.keep / BUILT).write_text(ingest + "\n", encoding="utf-8")
        show(runs, QUESTIONS)
        print(f"{ingest}; {machine()}")
        if args.per_question:
            answers = {"command": command_line(), **per_question(runs)}
            args.per_question.write_text(json.dumps(answers) + "\n", encoding="utf-8")
        if args.write:
            write_section("code-questions", markdown(runs, ingest, excluded))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
