"""The web page's server time at real size: every page of a copy of a 100,000-drawer palace (one kept by `bench.search
--keep DIR`), each asked `--rounds` times over loopback by one client, the whole page rendered; beside each, in the
same run, the API call that reads the same data (the floor a page cannot go under), and the ratio.

    python -m bench.pages --reuse /tmp/b100k [--rounds 15] [--write]

Target (the web page's second round): ≤ 50 ms a page at 100,000 drawers.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

import httpx

from bench.common import command_line, median, percentile, write_section
from bench.search import copy_palace_files, queries, start_daemon

TARGET_MS = 50.0


def timed(client: httpx.Client, path: str | list[str], rounds: int) -> list[float]:
    """Milliseconds of each of `rounds` requests: of `path`, or of each path of a list in turn (a page per query)."""
    paths = [path] if isinstance(path, str) else path
    client.get(paths[0]).raise_for_status()  # warm: templates, page cache
    spent = []
    for round_ in range(rounds):
        path = paths[round_ % len(paths)]
        started = time.perf_counter()
        answer = client.get(path)
        spent.append((time.perf_counter() - started) * 1000)
        if answer.status_code >= 400:
            raise SystemExit(f"{path}: {answer.status_code} {answer.text[:200]}")
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reuse", type=Path, required=True, help="a palace kept by bench.search --keep")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-pages-"))
    copy_palace_files(args.reuse, work / "palace")
    proc, address = start_daemon(work / "palace", work / "home", extra_env={"MEMCASTLE_EMBEDDINGS_PROVIDER": "none"})
    try:
        with httpx.Client(base_url=address, timeout=600, trust_env=False) as client:
            wing = client.get("/api/wings").json()["wings"][0]["name"]
            room = client.get(f"/api/wings/{wing}/rooms").json()["rooms"][0]["name"]
            drawer = client.get("/api/drawers", params={"wing": wing, "room": room, "limit": 1}).json()["drawers"][0]
            # The search page asks the search benchmark's own queries, a different one each round, as its API row does.
            asked = [quote(text) for text in queries(args.rounds)]
            pairs: list[tuple[str | list[str], str | list[str]]] = [  # (page, the API call reading the same data)
                ("/overview", "/api/status"),
                ("/", "/api/health"),
                ([f"/?query={q}" for q in asked], [f"/api/search?query={q}" for q in asked]),
                (f"/drawer/{drawer['id']}", f"/api/drawers/{drawer['id']}"),
                ("/browse", "/api/wings"),
                (f"/browse?wing={wing}", f"/api/wings/{wing}/rooms"),
                (f"/browse?wing={wing}&room={room}", f"/api/drawers?wing={wing}&room={room}&limit=50"),
                ("/jobs", "/api/jobs?limit=50"),
                ("/facts", "/api/facts?state=conflicting"),
                ("/preferences", "/api/preferences"),
                ("/miners", "/api/miners"),
                ("/diaries", "/api/wings"),
                ("/maintenance", "/api/jobs?kind=audit"),
                ("/mine?connector=notes", "/api/connectors"),
                ("/settings", "/api/config"),
                ("/audit", "/api/audit/reads"),
            ]
            rows = []
            worst = 0.0
            for page, api in pairs:
                page_ms, api_ms = timed(client, page, args.rounds), timed(client, api, args.rounds)
                worst = max(worst, median(page_ms))
                page_name = page if isinstance(page, str) else f"/?query=… ({args.rounds} queries of bench.search)"
                api_name = api if isinstance(api, str) else "/api/search?query=… (the same)"
                rows.append(
                    f"| `{page_name}` | {median(page_ms):.1f} | {percentile(page_ms, 95):.1f} | `{api_name}` "
                    f"{median(api_ms):.1f} | {median(page_ms) / max(median(api_ms), 0.01):.1f}× |"
                )
    finally:
        proc.terminate()
        proc.wait(timeout=120)
    verdict = "met" if worst <= TARGET_MS else "not met"
    report = (
        f"One client over loopback, {args.rounds} rounds a page after one warm-up, on a copy of `{args.reuse}` "
        f"(100,000 drawers in one wing). Target ≤ {TARGET_MS:.0f} ms a page (median): **{verdict}** (slowest "
        f"{worst:.1f} ms).\n\n| page | p50 ms | p95 ms | the API's read, p50 ms | page ÷ API |\n|---|---|---|---|---|\n"
        + "\n".join(rows)
        + f"\n\n`{command_line()}`"
    )
    print(report)
    if args.write:
        write_section("web-pages", "## The web page's server time at 100,000 drawers (`bench.pages`)\n\n" + report)


if __name__ == "__main__":
    main()
