"""The web page's screenshots for docs/web.md: every page at 360 and 1440 pixels wide (`--widths`), in headless
Chromium.

Not a benchmark: it builds a small palace of its own (a few notes, a superseded one, a mined folder), serves it with
a real daemon and photographs each page. `python -m bench.screenshots [--out docs/web] [--widths 1280,390]`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

PAGES = {
    "search": "/?q=gate+opens",
    "drawer": "/drawer/{drawer}",
    "browse": "/browse?wing=castle&room=notes",
    "jobs": "/jobs",
    "overview": "/overview",
    "forget": "/forget?drawer={drawer}",
    "facts": "/facts",
    "preferences": "/preferences",
    "login": "/login",
}
WIDTHS = (360, 1440)


def serve(root: Path) -> tuple[subprocess.Popen[bytes], str, dict[str, str]]:
    env = {
        **os.environ,
        "XDG_STATE_HOME": str(root / "state"),
        "XDG_CONFIG_HOME": str(root / "config"),
        "XDG_DATA_HOME": str(root / "data"),
        "MEMCASTLE_EMBEDDINGS_PROVIDER": "none",
    }
    palace = root / "palace"
    proc = subprocess.Popen(
        [sys.executable, "-m", "memcastle", "--palace", str(palace), "serve", "--port", "0"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for entry in (root / "state").rglob("*.json"):
            address = json.loads(entry.read_text())["address"]
            try:
                if httpx.get(address + "/api/health", timeout=2).status_code == 200:
                    return proc, address, env
            except httpx.TransportError:
                pass
        time.sleep(0.1)
    proc.kill()
    raise SystemExit("the daemon did not start")


def seed(address: str, root: Path) -> str:
    with httpx.Client(base_url=address, timeout=60) as http:
        first = http.post("/api/notes", json={"content": "The gate opens at six.", "wing": "castle"}).json()
        later = http.post(
            f"/api/drawers/{first['drawer']['id']}/supersede",
            json={"content": "The gate opens at seven in winter; at six from April.", "reason": "winter hours"},
        ).json()
        http.post("/api/notes", json={"content": "The east gate stays shut during storms.", "wing": "castle"})
        for city in ("Berlin", "Paris"):
            http.post("/api/facts", json={"subject": "Ada", "predicate": "located_in", "object": city})
        folder = root / "home" / "vault"
        folder.mkdir(parents=True)
        for i in range(40):
            (folder / f"tower-{i}.md").write_text(f"# Tower {i}\n\nThe tower {i} gate log. " * 10 + "\n")
        http.post("/api/mine", json={"connector": "notes", "locator": str(folder), "wing": "vault"})
        return str(later["id"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=Path("docs/web"))
    parser.add_argument(
        "--widths", default=",".join(map(str, WIDTHS)), help="comma-separated window widths in pixels (e.g. 1280,390)"
    )
    args = parser.parse_args()
    widths = [int(w) for w in args.widths.split(",")]
    from selenium import webdriver

    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="memcastle-shots-") as tmp:
        root = Path(tmp)
        proc, address, _ = serve(root)
        try:
            drawer = seed(address, root)
            options = webdriver.ChromeOptions()
            options.binary_location = shutil.which("chromium") or ""
            for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--hide-scrollbars"):
                options.add_argument(flag)
            service = webdriver.ChromeService(executable_path=shutil.which("chromedriver") or "chromedriver")
            browser = webdriver.Chrome(options=options, service=service)
            try:
                for name, path in PAGES.items():
                    for width in widths:
                        browser.set_window_size(width, 900)
                        browser.get(address + path.format(drawer=drawer))
                        time.sleep(0.5)  # let htmx and the event stream settle before the picture
                        height = browser.execute_script("return document.documentElement.scrollHeight")
                        browser.set_window_size(width, min(int(height), 2400))
                        browser.save_screenshot(str(args.out / f"{name}-{width}.png"))
                        print(f"{name}-{width}.png")
            finally:
                browser.quit()
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
