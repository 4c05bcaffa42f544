"""The HTML report in a real browser (issue 11): Debian's headless Chromium opens a report
built by the real pipeline; every image must have loaded, no table may be wider than the
column it sits in, no header may be a raw column name, and a PNG screenshot of each study
section is saved for CI to keep (in $JUDGEBIAS_ARTIFACTS/report-screenshots, else
test-artifacts/report-screenshots under the repository root).

Text inside figures (issue 19): a figure is a picture, so the page cannot see its text.
Every figure file carries the box of each text line matplotlib drew into it
(`judgebias.report.figures.text_layout`, measured by the renderer that drew the pixels);
the report links each figure to its file, and the browser says how wide it shows the
figure, which scales those boxes to what the reader sees. No two lines may overlap, and
no line may be shown smaller than `MIN_TEXT_PX`.

Top-down (issue 42): the first section after the judge card (a study's, or the first of
any report without a card) must start within `SCREENS` window heights of the top, as the
report opens (folds closed); the folds are then opened, so the tables and images in them
are checked like the rest.

Each study's pipeline test opens the report its own project already built (tests marked
``browser``), so no pipeline runs twice for this. Chromium is driven over the DevTools
protocol (one websocket, `websockets`' synchronous client), so nothing but Debian's
/usr/bin/chromium is needed; where it is missing, the ``chromium`` fixture (conftest.py)
installs it with apt-get, once for all xdist workers (a file lock).
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import re
import shutil
import subprocess
import time
import urllib.parse
from pathlib import Path

import numpy as np
import pytest

from helpers.project import REPO

MIN_TEXT_PX = 8.0
"""The smallest font size (CSS pixels, as shown at the window's width) a figure may use."""

OVERLAP_PX = 1.0
"""How deep (figure pixels) two text boxes may run into each other before they overlap:
glyph boxes that merely touch are fine."""


def artifacts_dir() -> Path:
    root = Path(os.environ.get("JUDGEBIAS_ARTIFACTS") or REPO / "test-artifacts")
    return root / "report-screenshots"


CHROMIUM = Path("/usr/bin/chromium")
WIDTH, HEIGHT = 1280, 900  # a laptop-sized window

SCREENS = 2
"""How many window heights down the first section after the judge card may start: the
card summarises, the studies explain, and a reader should reach them by scrolling a
screen or two, not a wall of card rows (issue 42)."""


# --------------------------------------------------------------------------- Chromium


def _apt_get(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    return subprocess.run(["apt-get", "-o", "DPkg::Lock::Timeout=600", "-y", *args],
                          env=env, capture_output=True, text=True, timeout=900)


def install_chromium(lock: Path) -> Path:
    """/usr/bin/chromium, installed from Debian's packages if missing (one worker installs,
    the others wait on the lock)."""
    from filelock import FileLock

    if CHROMIUM.exists():
        return CHROMIUM
    with FileLock(str(lock)):
        if not CHROMIUM.exists():
            if shutil.which("apt-get") is None or os.geteuid() != 0:
                pytest.fail("/usr/bin/chromium is missing and cannot be installed "
                            "(needs root and apt-get): apt-get install chromium")
            result = _apt_get("install", "--no-install-recommends", "chromium")
            if result.returncode != 0:  # stale package lists on a fresh machine
                _apt_get("update")
                result = _apt_get("install", "--no-install-recommends", "chromium")
            assert result.returncode == 0, f"apt-get install chromium:\n{result.stderr}"
    assert CHROMIUM.exists()
    return CHROMIUM


class Browser:
    """A headless Chromium and one page of it, over the DevTools protocol."""

    def __init__(self, executable: Path, profile: Path) -> None:
        from websockets.sync.client import connect

        self.process = subprocess.Popen(
            [str(executable), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--hide-scrollbars", "--mute-audio",
             f"--user-data-dir={profile}", "--remote-debugging-port=0", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self._ids = itertools.count(1)
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.is_file() and len(port_file.read_text().split()) == 2):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError("chromium did not start (no DevToolsActivePort)")
            time.sleep(0.1)
        port, path = port_file.read_text().split()
        self.ws = connect(f"ws://127.0.0.1:{port}{path}", max_size=None,
                          open_timeout=30).__enter__()  # closed in close()
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.send("Target.attachToTarget", targetId=target,
                                 flatten=True)["sessionId"]

    def send(self, method: str, *, on_page: bool = False, **params) -> dict:
        """One command; waits for its answer (events in between are dropped)."""
        message = {"id": next(self._ids), "method": method, "params": params}
        if on_page:
            message["sessionId"] = self.session
        self.ws.send(json.dumps(message))
        while True:
            reply = json.loads(self.ws.recv(timeout=120))
            if reply.get("id") == message["id"]:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]

    def page(self, method: str, **params) -> dict:
        return self.send(method, on_page=True, **params)

    def evaluate(self, expression: str):
        result = self.page("Runtime.evaluate", expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"javascript failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def close(self) -> None:
        if getattr(self, "ws", None) is not None:
            self.ws.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


# Every table's box against its wrapper, the wrapper against the page's content box, and
# the page itself: a table that needs scrolling or sticks out is cut off for the reader.
_LAYOUT = """(() => {
  const body = document.body.getBoundingClientRect();
  const style = getComputedStyle(document.body);
  const right = body.right - parseFloat(style.paddingRight);
  const tables = Array.from(document.querySelectorAll('table')).map(t => {
    const wrap = t.parentElement;
    return {caption: t.caption ? t.caption.textContent.slice(0, 90) : '(no caption)',
            section: t.closest('body > section').querySelector('h2').textContent,
            wrap_class: wrap.className,
            table_width: t.scrollWidth, table_right: t.getBoundingClientRect().right,
            wrap_client: wrap.clientWidth, wrap_scroll: wrap.scrollWidth,
            wrap_right: wrap.getBoundingClientRect().right, content_right: right};
  });
  return {tables, page_scroll: document.documentElement.scrollWidth,
          page_client: document.documentElement.clientWidth};
})()"""

_IMAGES = """Array.from(document.images).map(i => ({
  alt: i.alt.slice(0, 90), complete: i.complete, width: i.naturalWidth,
  shown: i.getBoundingClientRect().width,
  link: i.closest('a') ? i.closest('a').href : null}))"""

# Each table's row labels and the header over them (empty for an unnamed index).
_ROW_LABELS = """Array.from(document.querySelectorAll('table')).map(t => ({
  caption: t.caption ? t.caption.textContent.slice(0, 90) : '(no caption)',
  corner: t.querySelector('thead th') ? t.querySelector('thead th').textContent : '',
  rows: Array.from(t.querySelectorAll('tbody th[scope=row]')).map(th => th.textContent)}))"""

_SECTIONS = """Array.from(document.querySelectorAll('body > section')).map(s => {
  const r = s.getBoundingClientRect();
  return {id: s.id, title: s.querySelector('h2').textContent,
          x: r.left + window.scrollX, y: r.top + window.scrollY,
          width: r.width, height: r.height};
})"""


# The first section after the judge card (not the provenance): its heading's offset from
# the top of the page, and the window's height.
_FIRST_SECTION = """(() => {
  const s = Array.from(document.querySelectorAll('body > section'))
    .find(s => s.id !== 'judge-card' && s.id !== 'provenance');
  if (!s) return null;
  const h = s.querySelector('h2');
  return {title: h.textContent, top: h.getBoundingClientRect().top + window.scrollY,
          screen: window.innerHeight};
})()"""

_OPEN_FOLDS = ("document.querySelectorAll('details').forEach(d => { d.open = true; });"
               " document.body.getBoundingClientRect().height")


def _open(browser: Browser, path: Path, width: int = WIDTH) -> None:
    browser.page("Emulation.setDeviceMetricsOverride", width=width, height=HEIGHT,
                 deviceScaleFactor=1, mobile=False)
    browser.page("Page.navigate", url=path.resolve().as_uri())
    deadline = time.monotonic() + 60
    ready = ("document.readyState === 'complete' && "
             "Array.from(document.images).every(i => i.complete)")
    while not browser.evaluate(ready):
        assert time.monotonic() < deadline, "the report did not finish loading in 60 s"
        time.sleep(0.2)
    browser.evaluate("document.fonts.ready.then(() => true)")


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40]


def _screenshots(browser: Browser, out: Path) -> list[Path]:
    """One PNG per study section (h2), the whole section at the window's width."""
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.png"):
        old.unlink()
    written = []
    for k, s in enumerate(browser.evaluate(_SECTIONS), start=1):
        if s["id"] == "provenance":
            continue
        shot = browser.page("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                            clip={"x": 0, "y": max(s["y"] - 8, 0), "width": WIDTH,
                                  "height": s["height"] + 16, "scale": 1})
        path = out / f"{k:02d}-{_slug(s['title'])}.png"
        path.write_bytes(base64.b64decode(shot["data"]))
        written.append(path)
    return written


def _depth(a: np.ndarray, b: np.ndarray) -> float:
    """How far two convex boxes (corners in order) run into each other: the smallest
    overlap of their shadows on the normals of their edges (separating axis theorem);
    zero or less: apart."""
    depth = np.inf
    for box in (a, b):
        edges = np.roll(box, -1, axis=0) - box
        for normal in np.stack([-edges[:, 1], edges[:, 0]], axis=1):
            length = float(np.hypot(*normal))
            if length == 0:
                continue
            on_a, on_b = a @ (normal / length), b @ (normal / length)
            depth = min(depth, min(on_a.max(), on_b.max()) - max(on_a.min(), on_b.min()))
    return float(depth)


def text_problems(layout: dict, shown_width: float) -> list[str]:
    """Text in one figure, shown `shown_width` CSS pixels wide, that a reader cannot read:
    lines smaller than `MIN_TEXT_PX` as shown, and lines whose boxes overlap."""
    texts = layout["texts"]
    scale = shown_width / layout["width"]
    problems = [f"{t['text']!r} is {t['px'] * scale:.1f} px high as shown (< {MIN_TEXT_PX:g})"
                for t in texts if t["px"] * scale < MIN_TEXT_PX]
    boxes = [np.asarray(t["box"], dtype=float) for t in texts]
    if len(boxes) < 2:
        return problems
    low = np.array([b.min(axis=0) for b in boxes])
    high = np.array([b.max(axis=0) for b in boxes])
    # Upright bounding boxes first (cheap, all pairs at once), then the rotated boxes.
    shared = np.minimum(high[:, None], high[None]) - np.maximum(low[:, None], low[None])
    near = np.argwhere(np.triu((shared > OVERLAP_PX).all(axis=2), k=1))
    problems += [f"{texts[i]['text']!r} overlaps {texts[j]['text']!r}"
                 for i, j in near if _depth(boxes[i], boxes[j]) > OVERLAP_PX]
    return problems


def figure_text_problems(images: list[dict], limit: int = 8) -> list[str]:
    """`text_problems` of every image on the page (`_IMAGES`: its shown width and the
    link to its file), at most `limit` per figure; an image without a text layout is a
    problem too, since nobody could check it."""
    from judgebias.report.figures import text_layout

    problems = []
    for image in images:
        link = urllib.parse.urlparse(image["link"] or "")
        path = Path(urllib.parse.unquote(link.path))
        if link.scheme != "file" or not path.is_file():
            problems.append(f"{image['alt']}: not linked to its file ({image['link']})")
            continue
        layout = text_layout(path.read_bytes())
        if layout is None:
            problems.append(f"{image['alt']}: no text layout (draw it with "
                            "judgebias.report.figures.save_figure)")
            continue
        found = text_problems(layout, image["shown"])
        problems += [f"{image['alt']}: {p}" for p in found[:limit]]
        if len(found) > limit:
            problems.append(f"{image['alt']}: ... {len(found) - limit} more")
    return problems


def first_section_problem(browser: Browser) -> str | None:
    """Why the open page does not read top-down: its first section after the judge card
    starts more than `SCREENS` window heights down; None when it does (or has none)."""
    first = browser.evaluate(_FIRST_SECTION)
    if first is None or first["top"] <= SCREENS * first["screen"]:
        return None
    return (f"the first section after the judge card, {first['title']!r}, starts "
            f"{first['top']:.0f} px down, more than {SCREENS} screens of "
            f"{first['screen']} px: fold what stands before it")


def check_report(browser: Browser, report: Path, studies: list[str], name: str) -> None:
    """Open `report`: the sections of `studies` are there and photographed (into
    ``<artifacts>/<name>/``), the first after the judge card starts within `SCREENS`
    screens of the top, images load, text in figures is readable as shown, tables fit
    their column (folded ones opened), headers are words, rows are not labelled 0, 1,
    2, ... and no cell says True or False."""
    _open(browser, report)
    too_far = first_section_problem(browser)  # as the report opens: folds closed
    out = artifacts_dir() / name
    shots = _screenshots(browser, out)  # before the checks, so a failure has its pictures
    shutil.copy(report, out / "report.html")

    titles = browser.evaluate("Array.from(document.querySelectorAll('body > section > h2'))"
                              ".map(h => h.textContent)")
    for study in studies:
        assert any(t.startswith(study) for t in titles), (study, titles)
    assert len(shots) == len(titles) - 1  # every section but provenance
    for shot in shots:
        assert shot.read_bytes().startswith(b"\x89PNG") and shot.stat().st_size > 5_000
    assert too_far is None, too_far

    browser.evaluate(_OPEN_FOLDS)  # what a fold holds must fit and load like the rest
    images = browser.evaluate(_IMAGES)
    assert images
    broken = [i for i in images if not (i["complete"] and i["width"] > 0 and i["shown"] > 0)]
    assert not broken, f"images that did not load: {[i['alt'] for i in broken]}"
    unreadable = figure_text_problems(images)
    assert not unreadable, "text in figures that cannot be read:\n" + "\n".join(
        f"  {p}" for p in unreadable)

    layout = browser.evaluate(_LAYOUT)
    assert layout["tables"]
    cut = [t for t in layout["tables"]
           if t["wrap_scroll"] > t["wrap_client"] + 1  # the wrapper would need to scroll
           or t["table_right"] > t["wrap_right"] + 1  # the table sticks out of it
           or t["wrap_right"] > t["content_right"] + 1]  # the wrapper leaves the page
    assert not cut, "tables wider than their column:\n" + "\n".join(
        f"  [{t['section'][:30]}] {t['caption']}: table {t['table_width']}px in "
        f"{t['wrap_client']}px" for t in cut)
    assert layout["page_scroll"] <= layout["page_client"], "the page scrolls sideways"

    headers = browser.evaluate("Array.from(document.querySelectorAll('thead th'))"
                               ".map(th => th.textContent)")
    raw = sorted({h for h in headers if re.fullmatch(r"[a-z0-9]+(_[a-z0-9]+)+", h)})
    assert not raw, f"raw column names as table headers: {raw}"
    numbered = [t["caption"] for t in browser.evaluate(_ROW_LABELS)
                if not t["corner"] and len(t["rows"]) > 1
                and t["rows"] == [str(k) for k in range(len(t["rows"]))]]
    assert not numbered, f"tables labelled by row number (a raw pandas index): {numbered}"
    cells = browser.evaluate("Array.from(document.querySelectorAll('td'))"
                             ".map(td => td.textContent)")
    assert not {"True", "False"} & set(cells), "tables print raw True/False"


# The judge card's compact table (the first table of #judge-card): its box against its
# wrapper and the page, and every filled cell's link with whether its target exists.
_CARD = """(() => {
  const table = document.querySelector('#judge-card table');
  if (!table) return null;
  const wrap = table.parentElement;
  const cells = Array.from(table.querySelectorAll('tbody td'))
    .filter(td => td.textContent.trim() !== '' && td.textContent !== '\u2013');
  const r = document.getElementById('judge-card').getBoundingClientRect();
  return {table_right: table.getBoundingClientRect().right,
          wrap_right: wrap.getBoundingClientRect().right,
          wrap_client: wrap.clientWidth, wrap_scroll: wrap.scrollWidth,
          page_client: document.documentElement.clientWidth,
          page_scroll: document.documentElement.scrollWidth,
          section: {y: r.top + window.scrollY, height: r.height},
          cells: cells.map(td => {
            const a = td.querySelector('a');
            const href = a ? a.getAttribute('href') : null;
            return {text: td.textContent, href: href,
                    target: !!(href && href.startsWith('#')
                               && document.getElementById(href.slice(1)))};
          })};
})()"""

CARD_WIDTH = 1400


def check_card(browser: Browser, report: Path, name: str) -> list[str]:
    """The judge card at a 1,400 px window: its compact table fits without scrolling,
    and every filled cell links to a section of the report (its study's). Returns the
    link targets; saves a screenshot of the card as ``<artifacts>/<name>/card.png``."""
    _open(browser, report, CARD_WIDTH)
    card = browser.evaluate(_CARD)
    assert card is not None, "the report has no judge card (#judge-card with a table)"
    out = artifacts_dir() / name
    out.mkdir(parents=True, exist_ok=True)
    shot = browser.page("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                        clip={"x": 0, "y": card["section"]["y"], "width": CARD_WIDTH,
                              "height": card["section"]["height"], "scale": 1})
    (out / "card.png").write_bytes(base64.b64decode(shot["data"]))
    assert card["wrap_scroll"] <= card["wrap_client"] + 1, card
    assert card["table_right"] <= card["wrap_right"] + 1, card
    assert card["page_scroll"] <= card["page_client"], "the page scrolls sideways"
    assert card["cells"], "the card's table has no filled cell"
    unlinked = [c for c in card["cells"] if not c["target"]]
    assert not unlinked, f"card cells without a link to a report section: {unlinked[:5]}"
    return sorted({c["href"] for c in card["cells"]})
