"""A page served by another program on this machine cannot change anything through the web page's forms.

Another port of 127.0.0.1 is another origin, yet it is "same-site" and shares the daemon's cookies: it can set
`memcastle_csrf` to a value of its choice (after pushing the daemon's own cookie out with junk ones) and post a form
with that value as the token. With auth off (the default) that used to forget drawers and cancel jobs. Now the
`Origin` must be the daemon's own exactly, and the token is an HMAC of the cookie under a key only the daemon holds.
"""

from __future__ import annotations

import html
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from waiting import CEILING, wait_until

pytestmark = pytest.mark.usefixtures("browser_available")


class AttackerSite:
    """A page on another loopback port, as any local program (a dev server, a rogue package) could serve."""

    def __init__(self, page: str) -> None:
        body = page.encode("utf-8")

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.address = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def attack_page(daemon: str, drawer_id: str, job_id: str) -> str:
    """Two auto-submitted forms with a token the page chose and set as the cookie, plus a no-cors fetch."""
    target = html.escape(daemon)
    return f"""<!doctype html><title>loading</title>
<iframe name="f1"></iframe><iframe name="f2"></iframe>
<form id="forget" method="post" action="{target}/forget" target="f1">
  <input name="csrf" value="chosen-by-the-attacker"><input name="drawer" value="{html.escape(drawer_id)}">
</form>
<form id="cancel" method="post" action="{target}/jobs/{html.escape(job_id)}/cancel" target="f2">
  <input name="csrf" value="chosen-by-the-attacker">
</form>
<script>
  // Push the daemon's own (HttpOnly) cookie out of the jar, clear the junk, then plant the cookie of one's choice.
  for (let i = 0; i < 400; i++) document.cookie = "junk" + i + "=" + "x".repeat(40) + "; path=/";
  for (let i = 0; i < 400; i++) document.cookie = "junk" + i + "=; expires=Thu, 01 Jan 1970 00:00:00 GMT; path=/";
  document.cookie = "memcastle_csrf=chosen-by-the-attacker; path=/";
  let sent = 0;
  const done = () => {{ sent += 1; document.title = "sent " + sent; }};
  document.getElementsByName("f1")[0].addEventListener("load", done);
  document.getElementsByName("f2")[0].addEventListener("load", done);
  // The cookie writes reach the browser's network side a moment later: submit once they have.
  setTimeout(() => {{
    document.getElementById("forget").submit();
    document.getElementById("cancel").submit();
    fetch("{target}/forget", {{method: "POST", mode: "no-cors",
          body: new URLSearchParams({{csrf: "chosen-by-the-attacker", drawer: "{html.escape(drawer_id)}"}})}})
      .finally(done);
  }}, 1000);
</script>"""


@pytest.fixture
def targets(daemon: Any, tmp_path: Path) -> Iterator[tuple[Any, str, str]]:
    """A daemon (auth off, the default), a drawer and a paused job."""
    served = daemon()
    folder = served.home.root / "cross-port-mine"
    folder.mkdir()
    for i in range(2000):
        (folder / f"page-{i}.md").write_text(f"# Page {i}\n\n" + f"The north gate log, entry {i}. " * 30 + "\n")
    with served.http() as http:
        note = http.post("/api/notes", json={"content": "The cellar key hangs by the door.", "wing": "xport"})
        drawer_id = note.json()["drawer"]["id"]
        job_id = http.post("/api/mine", json={"connector": "notes", "locator": str(folder)}).json()["job"]["id"]

        def paused() -> bool:
            job = http.get(f"/api/jobs/{job_id}").json()
            if job["status"] == "running":
                http.post(f"/api/jobs/{job_id}/pause", json={})
            assert job["status"] in ("queued", "running", "paused"), job
            return job["status"] == "paused"

        wait_until(paused, what="the mine to be paused")
    yield served, drawer_id, job_id


@pytest.mark.parametrize("visited", [False, True], ids=["never-opened-the-page", "has-the-page-open"])
def test_a_page_on_another_local_port_changes_nothing(
    browser: Any, targets: tuple[Any, str, str], visited: bool
) -> None:
    served, drawer_id, job_id = targets
    browser.delete_all_cookies()
    if visited:  # the victim has the daemon's page open: the browser holds a genuine cookie
        browser.get(served.address + "/jobs")
        assert browser.get_cookie("memcastle_csrf") is not None
    site = AttackerSite(attack_page(served.address, drawer_id, job_id))
    try:
        browser.get(site.address + "/")
        wait_until(lambda: browser.title == "sent 3", what="the attacker's three requests to be answered")
    finally:
        site.close()
    with served.http() as http:
        assert http.get(f"/api/drawers/{drawer_id}").status_code == 200, "the drawer was forgotten"
        assert http.get(f"/api/jobs/{job_id}").json()["status"] == "paused", "the job was cancelled"


def test_a_token_the_client_chose_is_refused_without_any_origin(targets: tuple[Any, str, str]) -> None:
    """A browser that sends no `Origin`: the cookie and token a page can set itself do not pass."""
    served, drawer_id, job_id = targets
    with httpx.Client(base_url=served.address, trust_env=False, timeout=CEILING) as http:
        http.cookies.set("memcastle_csrf", "chosen-by-the-attacker")
        forget = http.post("/forget", data={"csrf": "chosen-by-the-attacker", "drawer": drawer_id})
        assert forget.status_code == 403
        cancel = http.post(f"/jobs/{job_id}/cancel", data={"csrf": "chosen-by-the-attacker"})
        assert cancel.status_code == 403
        # The daemon's own page hands out a token that does pass, for the cookie it set.
        page = http.get("/jobs")
        token = page.text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        assert token != http.cookies.get("memcastle_csrf")
        assert http.post(f"/jobs/{job_id}/cancel", data={"csrf": token}, follow_redirects=False).status_code == 303
        assert http.get(f"/api/jobs/{job_id}").json()["status"] == "cancelled"
        assert http.get(f"/api/drawers/{drawer_id}").status_code == 200
