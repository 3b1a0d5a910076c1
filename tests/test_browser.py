"""The leaderboard page and a run report, opened in headless Chromium as a person would.

Chromium is driven over the DevTools protocol on a pipe (--remote-debugging-pipe: commands on
fd 3, replies on fd 4, each a JSON message ended by a NUL byte), so no driver, no port and no
Python package beyond the standard library is needed.
"""

from __future__ import annotations

import base64
import csv
import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import harness
from test_report import make_run

from harness.figures import FIGURES

WIDTH, HEIGHT = 1400, 900  # a laptop's browser window: the leaderboard must fit it without scrolling sideways
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", f"--window-size={WIDTH},{HEIGHT}", "--remote-debugging-pipe",
)  # fmt: skip
PUBLISHED = Path(__file__).resolve().parent.parent / "results"


def find_chromium() -> str:
    """Debian's chromium, which scripts/setup.sh installs."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    reason = "Chromium is not installed (Debian: apt-get install chromium; scripts/setup.sh does it as root)"
    if os.environ.get("CI"):
        pytest.fail(reason)  # the set-up installs it in CI: a skip there would hide a broken set-up
    pytest.skip(reason)


class Chromium:
    """A headless Chromium and its DevTools connection."""

    def __init__(self, exe: str, profile: Path, log: Path) -> None:
        child_in, self._out = os.pipe()
        self._in, child_out = os.pipe()
        child_in, child_out = _above_9(child_in), _above_9(child_out)  # never 3 or 4 themselves
        self._log = log
        # bash (not sh: dash cannot name fds above 9) moves the pipe ends to fds 3 and 4, where Chromium looks
        moves = f"3<&{child_in} 4>&{child_out} {child_in}<&- {child_out}>&-"
        with log.open("wb") as stderr:
            self.proc = subprocess.Popen(
                ["bash", "-c", f'exec "$0" "$@" {moves}', exe, *FLAGS, f"--user-data-dir={profile}"],
                pass_fds=(child_in, child_out), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
            )  # fmt: skip
        os.close(child_in)
        os.close(child_out)
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict[str, Any]] = []

    def call(self, method: str, session: str | None = None, timeout: float = 30, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._out, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(deadline, method)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
            self._events.append(reply)

    def wait_for(self, event: str, session: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while True:
            for i, e in enumerate(self._events):
                if e.get("method") == event and e.get("sessionId") == session:
                    del self._events[i]
                    return
            self._events.append(self._read(deadline, event))

    def _read(self, deadline: float, waiting_for: str) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self._in], [], [], max(left, 0))
            if not ready:
                raise TimeoutError(f"Chromium did not answer {waiting_for}; its log: {self._log_tail()}")
            chunk = os.read(self._in, 1 << 20)
            if not chunk:
                raise RuntimeError(f"Chromium exited; its log: {self._log_tail()}")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)

    def _log_tail(self) -> str:
        return self._log.read_text(errors="replace")[-2000:]

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=10)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._in)
        os.close(self._out)


def _above_9(fd: int) -> int:
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return high


class Tab:
    def __init__(self, browser: Chromium) -> None:
        self.browser = browser
        target = browser.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = browser.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Page.enable")
        self.call("Emulation.setDeviceMetricsOverride", width=WIDTH, height=HEIGHT, deviceScaleFactor=1, mobile=False)

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        return self.browser.call(method, self.session, **params)

    def open(self, url: str) -> None:
        self.call("Page.navigate", url=url)
        self.browser.wait_for("Page.loadEventFired", self.session)

    def js(self, expression: str) -> Any:
        reply = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in reply:
            raise AssertionError(f"{expression}: {reply['exceptionDetails']}")
        return reply["result"].get("value")

    def click(self, selector: str) -> None:
        """A real mouse click in the middle of the element (of its first line, for a wrapped link)."""
        x, y = self.js(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); e.scrollIntoView();"
            " const r = e.getClientRects()[0]; return [r.x + r.width / 2, r.y + r.height / 2]; })()"
        )
        assert 0 <= x < WIDTH and 0 <= y < HEIGHT, f"{selector} is off screen at {x}, {y}"
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)

    def screenshot(self, path: Path) -> bytes:
        size = self.call("Page.getLayoutMetrics")["cssContentSize"]
        clip = {"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], 6000), "scale": 1}
        data = base64.b64decode(self.call("Page.captureScreenshot", format="png", clip=clip,
                                          captureBeyondViewport=True)["data"])  # fmt: skip
        path.write_bytes(data)
        return data


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results root with a real short benchmark (report written by the benchmark) and a second run."""
    root = tmp_path_factory.mktemp("results")
    out = harness("benchmark", "--gym", "math", "--steps", "3", "--batch", "1", "--group", "2",
                  "--results", str(root))  # fmt: skip
    assert out.returncode == 0, out.stderr
    make_run(root, "20000101T000000Z-toy", speedup=9.0)  # a second row to sort against
    out = harness("leaderboard", "--results", str(root), "--include-dirty")  # the checkout may be dirty
    assert out.returncode == 0, out.stderr
    return root


@pytest.fixture()
def tab(tmp_path: Path):
    browser = Chromium(find_chromium(), tmp_path / "profile", tmp_path / "chromium.log")
    try:
        yield Tab(browser)
    finally:
        browser.close()


def column_values(tab: Tab, header: str) -> list[str]:
    """A main-table column's values in page order: a cell's bold figure where it has one (the speedup,
    above its chart), else its text."""
    return tab.js(
        "(() => { const t = document.getElementById('leaderboard');"
        f" const col = [...t.tHead.rows[0].cells].findIndex(c => c.textContent.trim() === {json.dumps(header)});"
        " return [...t.tBodies].map(b => b.rows[0].cells[col])"
        "   .map(c => (c.querySelector('b') || c).textContent.trim());"
        " })()"
    )


# Per row of the main table, each chart's size and the classes of its marks, and whether every mark
# lies inside its chart.
CHARTS = """[...document.getElementById('leaderboard').tBodies].map(body =>
  [...body.rows[0].querySelectorAll('svg.chart')].map(svg => {
    const box = svg.getBoundingClientRect();
    const marks = [...svg.querySelectorAll('[class]')];
    return {width: box.width, height: box.height, marks: marks.map(m => m.getAttribute('class')),
            inside: marks.every(m => { const r = m.getBoundingClientRect();
              return (r.width > 0 || r.height > 0) && r.left >= box.left - 0.5 && r.right <= box.right + 0.5
                && r.top >= box.top - 0.5 && r.bottom <= box.bottom + 0.5; })};
  }))"""


def check_the_page_fits_and_every_chart_rendered(tab: Tab, rows: list[dict[str, str]]) -> None:
    """No sideways scrolling at WIDTH x HEIGHT, of the page or of the table in its box; per row, a
    speedup chart and an idle chart with the marks its figures call for, drawn inside the chart."""
    width = tab.js("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert width[0] <= width[1] <= WIDTH, f"the page scrolls sideways: {width}"
    box = tab.js("(() => { const s = document.querySelector('.scroll'); return [s.scrollWidth, s.clientWidth]; })()")
    assert box[0] <= box[1], f"the table overflows its box: {box}"
    charts = tab.js(CHARTS)
    assert len(charts) == len(rows)
    for row, drawn in zip(rows, charts, strict=True):
        for chart in drawn:
            assert chart["width"] > 100 and chart["height"] > 30 and chart["inside"], (row["run_id"], chart)
        if not row["speedup"]:  # one mode measured (an async-only run): its idle alone, no speedup to draw
            assert len(drawn) == 1 and "mean async" in drawn[0]["marks"], (row["run_id"], drawn)
            continue
        speedup, idle = drawn
        expected = {"mean run", "ideal", "null", "mean control" if row["control_speedup"] else "none"}
        expected |= {"interval run"} if row["speedup_low"] else set()
        assert expected <= set(speedup["marks"]), (row["run_id"], speedup["marks"])
        assert {"mean sync", "mean async"} <= set(idle["marks"]), (row["run_id"], idle["marks"])
        assert ("interval sync" in idle["marks"]) == bool(row["idle_sync_low"]), (row["run_id"], idle["marks"])


@pytest.mark.slow
def test_leaderboard_and_report_render_and_sort(results: Path, tab: Tab, tmp_path: Path):
    real = next(p for p in (results / "runs").iterdir() if p.name.endswith("-math"))
    assert (real / "report.html").is_file(), "harness benchmark writes the report itself"

    tab.open((results / "index.html").as_uri())
    assert tab.js("document.title") == "heavygym leaderboard"
    assert tab.js("document.querySelectorAll('#leaderboard > tbody').length") == 2
    assert column_values(tab, "gym") == ["math", "toy"]
    rows = list(csv.DictReader((results / "leaderboard.csv").read_text().splitlines()))
    check_the_page_fits_and_every_chart_rendered(tab, rows)

    header = "speedup [95%]"
    speedup = 1 + tab.js(f"[...document.querySelectorAll('#leaderboard th')].findIndex(t => t.innerText === {header!r})")
    speedups = [column_values(tab, header)]
    for _ in range(2):
        tab.click(f"#leaderboard th:nth-child({speedup}) button")
        speedups.append(column_values(tab, header))
    as_numbers = [[float(v.rstrip("x")) for v in column] for column in speedups]
    assert as_numbers[1] == sorted(as_numbers[0]) and as_numbers[2] == sorted(as_numbers[0], reverse=True)
    assert tab.js(f"document.querySelector('#leaderboard th:nth-child({speedup})').getAttribute('aria-sort')") == (
        "descending"
    )
    # sorting moves each row with its details; a click opens them
    assert tab.js("[...document.querySelectorAll('#leaderboard > tbody')].map(b => b.rows.length)") == [2, 2]
    assert tab.js("document.querySelector('#leaderboard > tbody details').open") is False
    tab.click("#leaderboard > tbody summary")
    opened = tab.js("(() => { const d = document.querySelector('#leaderboard > tbody details');"
                    " return [d.open, d.innerText]; })()")  # fmt: skip
    assert opened[0] and "tool versions" in opened[1] and "hardware (full)" in opened[1], opened
    assert tab.js("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    assert len(tab.screenshot(tmp_path / "leaderboard.png")) > 10_000

    tab.click(f'a[href="runs/{real.name}/report.html"]')  # follow the row's link to its report
    tab.browser.wait_for("Page.loadEventFired", tab.session)
    assert tab.js("location.pathname").endswith(f"{real.name}/report.html")
    images = tab.js("[...document.images].map(i => [i.complete, i.naturalWidth, i.naturalHeight])")
    assert len(images) == len(FIGURES) and all(done and w > 300 and h > 100 for done, w, h in images), images
    assert tab.js("document.querySelectorAll('table').length") >= 4
    assert "emulated (profile h100-qwen3-4b)" in tab.js("document.body.innerText")
    shot = tab.screenshot(tmp_path / "report.png")
    assert shot.startswith(b"\x89PNG") and len(shot) > 50_000


def test_the_published_leaderboard_fits_the_window_and_draws_every_chart(tab: Tab, tmp_path: Path):
    """results/index.html as committed: every published row, with its intervals and control."""
    rows = list(csv.DictReader((PUBLISHED / "leaderboard.csv").read_text().splitlines()))
    tab.open((PUBLISHED / "index.html").as_uri())
    assert tab.js("document.querySelectorAll('#leaderboard > tbody').length") == len(rows) >= 10
    assert column_values(tab, "run") == [r["run_id"] for r in rows]
    check_the_page_fits_and_every_chart_rendered(tab, rows)
    assert len(tab.screenshot(tmp_path / "published.png")) > 50_000
