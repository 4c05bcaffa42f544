"""One self-contained HTML report that every study adds sections to (docs/design.md principle 10).

A report is plain data: a `Report` holds `Section`s, each with an intro, `Figure`s,
`Table`s, notes and nested subsections. Studies build these objects; `render_report` turns
them into a single HTML string and `write_report` writes it atomically.

Why it is built this way:
- Self-contained: images are embedded as base64 data URIs and the CSS is inline, with no
  external scripts, fonts or links, so the file can be mailed, archived by DVC, or opened
  offline years later and look the same.
- Small: a large image (a gallery of photographs) is embedded downscaled to what the
  page can show (`EMBED_WIDTH`), as JPEG if it is photographic, and every figure links
  to its full-size file next to the report (the pipeline's own figure), so the report
  stays a few megabytes.
- Figure i of a section is laid out next to table i of the same section (figure first,
  then its table), because every figure should sit beside the numbers it was drawn from.
- Simulated models are announced in a banner at the top and marked " (sim)" wherever their
  names appear in a table, because reports must say plainly when a model is simulated
  (docs/design.md principle 7).
- The contents run in two columns on a wide screen (one on a narrow one), each
  section's subsections on its line: a study with many subsections must not push the
  report's first section a screen down.
- A section may be folded (`Section.fold`): its body in a collapsed <details> under its
  title, so a reference table hundreds of rows long (every row of the judge card) does
  not push the study sections screens down; the report still holds every number.
- All text passes through `html.escape`; captions and model names come from configs and
  model output and must never be able to inject markup.
- Output is a pure function of the `Report` (no timestamps, stable ids), so an unchanged
  report is byte-identical and does not trigger downstream reruns.
"""

from __future__ import annotations

import base64
import html
import io
import math
import os
import urllib.parse
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from judgebias.io.artifacts import write_bytes
from judgebias.report.figures import SIM_SUFFIX, text_layout

EMBED_WIDTH = 1200
"""Width, in pixels, large images are embedded at: the page's content is at most 1152 CSS
pixels wide, so more pixels would only add bytes (the full-size file is a click away)."""

PHOTO_BYTES = 400_000
"""An image file larger than this is embedded downscaled (see `_embedded`)."""

LEGIBLE_PX = 8.0
"""The smallest text, in CSS pixels, a figure may be laid out to show (`_legible_width`)."""

_MIME_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".svg": "image/svg+xml",
    ".webp": "image/webp",
}

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif;
       max-width: 1200px; margin: 0 auto; padding: 1.5rem; color: #1a1a1a; line-height: 1.45; }
h1 { border-bottom: 2px solid #333; padding-bottom: 0.3rem; }
h2 { border-bottom: 1px solid #bbb; padding-bottom: 0.2rem; margin-top: 2.2rem; }
p.headline { font-weight: 600; background: #eef4fb; border-left: 4px solid #2b6cb0;
             padding: 0.5rem 0.8rem; }
.sim-banner { background: #fff3cd; border: 2px solid #d39e00; color: #5c4400;
              padding: 0.8rem 1rem; font-weight: 600; margin: 1rem 0; border-radius: 4px; }
nav.toc { background: #f6f6f6; border: 1px solid #ddd; padding: 0.6rem 1.2rem; }
nav.toc ul { margin: 0.2rem 0; padding-left: 1.2rem; }
nav.toc > ul { columns: 2 24rem; column-gap: 2rem; }
nav.toc > ul > li { break-inside: avoid; margin-bottom: 0.15rem; }
nav.toc li ul { display: inline; margin: 0; padding: 0; }
nav.toc li ul::before { content: " \\2014  "; }
nav.toc li li { display: inline; }
nav.toc li li + li::before { content: " \\00b7  "; }
.pair { display: flex; flex-wrap: wrap; gap: 1.5rem; align-items: flex-start; margin: 1rem 0; }
figure { margin: 0; flex: 1 1 480px; max-width: 100%; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figure a { display: block; }
figcaption, table caption { font-size: 0.9rem; color: #444; text-align: left;
                            caption-side: top; padding-bottom: 0.3rem; }
.table-wrap { flex: 1 1 auto; max-width: 100%; overflow-x: auto; }
table { border-collapse: collapse; font-size: 0.85rem; }
table.wide { font-size: 0.75rem; }
th, td { border: 1px solid #ccc; padding: 0.2rem 0.5rem; }
table.wide th, table.wide td { padding: 0.15rem 0.3rem; }
th { background: #f0f0f0; overflow-wrap: break-word; }
thead th { vertical-align: bottom; font-weight: 600; }
thead th[colspan] { text-align: center; }
td:not(.num) { overflow-wrap: anywhere; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.significant { background: #fde2c8; font-weight: 600; }
td a { color: inherit; }
.sim { color: #8a5a00; font-style: italic; }
ul.notes { font-size: 0.9rem; color: #333; }
details > summary { cursor: pointer; color: #2b6cb0; font-weight: 600; margin: 0.6rem 0; }
dl.provenance { display: grid; grid-template-columns: max-content auto; gap: 0.2rem 1rem;
                font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 0.85rem; }
dl.provenance dt { font-weight: 600; }
dl.provenance dd { margin: 0; word-break: break-all; }
"""


# --------------------------------------------------------------------------- data model


@dataclass
class Figure:
    """An image file (PNG/SVG/JPEG) to embed, with the caption shown under it."""

    path: Path
    caption: str


@dataclass
class Table:
    """A table to show; floats are formatted with `float_fmt` (a str.format pattern).

    `bold`, a boolean frame of the same shape, marks cells shown in bold: the papers mark
    the best entry of a row, and those not significantly different from it, that way.
    `links` (a frame of the same shape) gives a cell a link target ("#section-id", "" for
    none) and `classes` a CSS class from `CELL_CLASSES` ("" for none): the judge card
    links each cell to the study section it comes from and colours significant ones.
    """

    frame: pd.DataFrame
    caption: str
    float_fmt: str = "{:.3f}"
    bold: pd.DataFrame | None = None
    links: pd.DataFrame | None = None
    classes: pd.DataFrame | None = None


@dataclass
class Section:
    """A titled part of the report; `figures[i]` is laid out next to `tables[i]`.

    `headline`, if given, is the result in a sentence with its key numbers, shown first
    (before the intro that explains the method), so a reader need not dig for it."""

    title: str
    intro: str = ""
    figures: list[Figure] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    subsections: list[Section] = field(default_factory=list)
    headline: str = ""
    anchor: str = ""  # the section's id, where others link to it; else positional
    fold: str = ""
    """Where given, the text of a <summary>: the section's body (all but its title and
    headline) is folded in a collapsed <details>, so a long reference table (every row
    of the judge card) waits for a click instead of standing between the reader and
    the sections after it. Nothing in the fold is dropped: it is in the file, and
    opening it shows it."""


@dataclass
class Report:
    """The whole report: sections, provenance (params hash, commit, versions, ...) and the
    names of simulated models, which the report flags wherever they appear."""

    title: str
    sections: list[Section] = field(default_factory=list)
    provenance: dict[str, str] = field(default_factory=dict)
    simulated_models: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- small pieces


def _esc(text: object) -> str:
    """Escape any value for use in HTML text or a quoted attribute."""
    return html.escape(str(text), quote=True)


def _paragraphs(text: str) -> str:
    """Blank-line separated paragraphs of escaped text."""
    parts = [p.strip() for p in text.split("\n\n") if p.strip()]
    return "".join(f"<p>{_esc(p)}</p>\n" for p in parts)


def _figure_file(path: Path) -> tuple[str, bytes]:
    """(MIME type, bytes) of a figure file, with an error naming a missing or unknown one."""
    path = Path(path)
    mime = _MIME_TYPES.get(path.suffix.lower())
    if mime is None:
        raise ValueError(f"report: unsupported figure type {path.suffix!r} for {path}")
    if not path.is_file():
        raise FileNotFoundError(f"report: figure file not found: {path}")
    return mime, path.read_bytes()


def _embedded(mime: str, data: bytes) -> tuple[str, bytes]:
    """What the report embeds of a figure: the file itself, unless it is larger than
    `PHOTO_BYTES` (a gallery of photographs); then the smallest of the file, a copy
    downscaled to `EMBED_WIDTH` (Lanczos) as PNG, and that copy as JPEG when it is less
    than half the PNG (a photograph; charts stay PNG, which keeps thin text sharp)."""
    if mime not in ("image/png", "image/jpeg") or len(data) <= PHOTO_BYTES:
        return mime, data
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        picture = image.convert("RGB")
    if picture.width > EMBED_WIDTH:
        picture = picture.resize(
            (EMBED_WIDTH, round(picture.height * EMBED_WIDTH / picture.width)),
            Image.Resampling.LANCZOS)
    jpeg, png = io.BytesIO(), io.BytesIO()
    picture.save(jpeg, format="JPEG", quality=80)
    picture.save(png, format="PNG", optimize=True)
    candidates = [(data, mime), (png.getvalue(), "image/png")]
    if mime == "image/jpeg" or 2 * len(jpeg.getvalue()) < len(png.getvalue()):
        candidates.append((jpeg.getvalue(), "image/jpeg"))
    smallest, kind = min(candidates, key=lambda c: len(c[0]))
    return kind, smallest


def _legible_width(data: bytes, shown_from: int) -> int | None:
    """The narrowest width (CSS pixels) to lay a figure out at so that its smallest text
    (`text_layout`, in the pixels of the file `data`) is at least `LEGIBLE_PX` high; at
    most `shown_from`, the width of the embedded image, which is never enlarged. None
    when the figure records no text."""
    layout = text_layout(data)
    if not layout or not layout["texts"]:
        return None
    smallest = min(t["px"] for t in layout["texts"])
    return min(shown_from, math.ceil(layout["width"] * LEGIBLE_PX / smallest))


def _label_text(label: object) -> str:
    """A row/column label as text; MultiIndex tuples are joined with ' / '."""
    if isinstance(label, tuple):
        return " / ".join(str(part) for part in label)
    return str(label)


def _label_html(label: object, simulated: frozenset[str]) -> str:
    """An escaped label, marked " (sim)" when it names a simulated model."""
    text = _label_text(label)
    if text in simulated:
        return f'<span class="sim">{_esc(text + SIM_SUFFIX)}</span>'
    return _esc(text)


def _is_missing(value: object) -> bool:
    """True for None / NaN / NaT scalars (not for lists or arrays held in a cell)."""
    if value is None:
        return True
    if isinstance(value, (float, np.floating)):
        return math.isnan(value)
    return value is pd.NaT


def _cell_html(value: object, float_fmt: str, simulated: frozenset[str]) -> tuple[str, bool]:
    """(escaped cell text, is_numeric) for one table cell."""
    if _is_missing(value):
        return "–", False
    if isinstance(value, (bool, np.bool_)):
        return ("yes" if value else "no"), False
    if isinstance(value, (float, np.floating)):
        return _esc(float_fmt.format(float(value))), True
    if isinstance(value, (int, np.integer)):
        return _esc(value), True
    if isinstance(value, str):
        return _label_html(value, simulated), False
    return _esc(value), False


# --------------------------------------------------------------------------- blocks


class _Counter:
    """Running figure / table numbers across the whole report, and the folder the report
    is written to (figures link to their files relative to it; None: no links)."""

    def __init__(self, folder: Path | None = None) -> None:
        self.figures = 0
        self.tables = 0
        self.folder = folder


def _figure_html(figure: Figure, counter: _Counter) -> str:
    """The embedded image, laid out no narrower than its text needs to be legible, and
    linked to its full-size file when the report has a folder."""
    from PIL import Image

    counter.figures += 1
    caption = f"Figure {counter.figures}. {figure.caption}"
    original_mime, original = _figure_file(figure.path)
    mime, data = _embedded(original_mime, original)
    uri = f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
    width = None
    if mime != "image/svg+xml":
        with Image.open(io.BytesIO(data)) as picture:
            width = _legible_width(original, picture.width)
    style = f' style="min-width: min(100%, {width}px)"' if width else ""
    image = f'<img src="{uri}" alt="{_esc(figure.caption)}">'
    if counter.folder is not None:
        target = Path(os.path.relpath(os.path.abspath(figure.path),
                                      os.path.abspath(counter.folder))).as_posix()
        image = (f'<a href="{_esc(urllib.parse.quote(target))}" '
                 f'title="open the full-size figure">{image}</a>')
    return f"<figure{style}>{image}<figcaption>{_esc(caption)}</figcaption></figure>\n"


def _header_rows(frame: pd.DataFrame, simulated: frozenset[str]) -> str:
    """The <thead>: the index name(s) over the index column, then the column labels.

    MultiIndex columns get one header row per level, a label spanning the columns it
    heads ("ECE ↓" over STD, BEST, ...), which keeps wide tables narrow."""
    names = [n for n in frame.index.names if n is not None]
    corner = _esc(" / ".join(str(n) for n in names)) if names else ""
    if not isinstance(frame.columns, pd.MultiIndex) or frame.columns.nlevels < 2:
        labels = "".join(f"<th>{_label_html(c, simulated)}</th>" for c in frame.columns)
        return f"<thead><tr><th>{corner}</th>{labels}</tr></thead>"
    columns, levels = list(frame.columns), frame.columns.nlevels
    rows = []
    for level in range(levels):
        cells = [f'<th rowspan="{levels}">{corner}</th>'] if level == 0 else []
        start = 0
        while start < len(columns):
            end = start + 1
            while end < len(columns) and columns[end][:level + 1] == columns[start][:level + 1]:
                end += 1
            label = _label_html(columns[start][level], simulated)
            span = f' colspan="{end - start}" scope="colgroup"' if end - start > 1 else ""
            cells.append(f"<th{span}>{label}</th>")
            start = end
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return f"<thead>{''.join(rows)}</thead>"


# Tables with more columns than this get a smaller font and tighter cells.
_WIDE_COLUMNS = 8


CELL_CLASSES = ("significant",)
"""The CSS classes a table cell may carry (`Table.classes`)."""


def _aligned(frame: pd.DataFrame, marks: pd.DataFrame | None, fill: object) -> np.ndarray:
    """`marks` cell by cell against `frame` (labels may repeat if the axes are equal)."""
    if marks is None:
        return np.full(frame.shape, fill, dtype=object)
    if not (marks.index.equals(frame.index) and marks.columns.equals(frame.columns)):
        marks = marks.reindex(index=frame.index, columns=frame.columns)
    return marks.fillna(fill).to_numpy(dtype=object)


def _body_rows(frame: pd.DataFrame, float_fmt: str, simulated: frozenset[str],
               table: Table | None = None) -> str:
    bold = _aligned(frame, table.bold if table else None, False).astype(bool)
    links = _aligned(frame, table.links if table else None, "")
    classes = _aligned(frame, table.classes if table else None, "")
    unknown = set(classes.ravel()) - {"", *CELL_CLASSES}
    if unknown:
        raise ValueError(f"table cell classes {sorted(unknown)} are not in {CELL_CLASSES}")
    rows = []
    for r, (label, values) in enumerate(zip(frame.index, frame.itertuples(index=False,
                                                                          name=None),
                                            strict=True)):
        cells = []
        for c, value in enumerate(values):
            text, numeric = _cell_html(value, float_fmt, simulated)
            text = f"<strong>{text}</strong>" if bold[r, c] else text
            if links[r, c]:
                text = f'<a href="{_esc(links[r, c])}">{text}</a>'
            names = " ".join(n for n in ("num" if numeric else "", classes[r, c]) if n)
            cells.append(f'<td class="{names}">{text}</td>' if names else f"<td>{text}</td>")
        head = f'<th scope="row">{_label_html(label, simulated)}</th>'
        rows.append(f"<tr>{head}{''.join(cells)}</tr>")
    return "<tbody>" + "\n".join(rows) + "</tbody>"


def _table_html(table: Table, counter: _Counter, simulated: frozenset[str]) -> str:
    counter.tables += 1
    caption = f"Table {counter.tables}. {table.caption}"
    wide = ' class="wide"' if table.frame.shape[1] > _WIDE_COLUMNS else ""
    return (
        f'<div class="table-wrap"><table{wide}><caption>{_esc(caption)}</caption>'
        f"{_header_rows(table.frame, simulated)}"
        f"{_body_rows(table.frame, table.float_fmt, simulated, table)}</table></div>\n"
    )


def _pairs_html(section: Section, counter: _Counter, simulated: frozenset[str]) -> str:
    """Figure i then table i, side by side (wrapping on narrow screens)."""
    out = []
    for i in range(max(len(section.figures), len(section.tables))):
        parts = []
        if i < len(section.figures):
            parts.append(_figure_html(section.figures[i], counter))
        if i < len(section.tables):
            parts.append(_table_html(section.tables[i], counter, simulated))
        out.append(f'<div class="pair">\n{"".join(parts)}</div>\n')
    return "".join(out)


def _section_id(path: Sequence[int]) -> str:
    """Stable anchor from the section's position ("sec-2-1"); titles may repeat."""
    return "sec-" + "-".join(str(i) for i in path)


def _section_html(
    section: Section, path: tuple[int, ...], counter: _Counter, simulated: frozenset[str]
) -> str:
    level = min(len(path) + 1, 6)
    body = [_paragraphs(section.intro), _pairs_html(section, counter, simulated)]
    if section.notes:
        items = "".join(f"<li>{_esc(note)}</li>" for note in section.notes)
        body.append(f'<ul class="notes">{items}</ul>\n')
    for k, sub in enumerate(section.subsections, start=1):
        body.append(_section_html(sub, (*path, k), counter, simulated))
    if section.fold:
        body = [f"<details><summary>{_esc(section.fold)}</summary>\n", *body, "</details>\n"]
    return "".join([
        f'<section id="{_esc(section.anchor or _section_id(path))}">\n',
        f"<h{level}>{_esc(section.title)}</h{level}>\n",
        f'<p class="headline">{_esc(section.headline)}</p>\n' if section.headline else "",
        *body,
        "</section>\n",
    ])


def _toc_html(sections: Sequence[Section], path: tuple[int, ...] = ()) -> str:
    """Nested list of links to every section (and the provenance block at top level)."""
    items = []
    for k, section in enumerate(sections, start=1):
        sub_path = (*path, k)
        nested = _toc_html(section.subsections, sub_path) if section.subsections else ""
        items.append(
            f'<li><a href="#{_esc(section.anchor or _section_id(sub_path))}">'
            f"{_esc(section.title)}</a>{nested}</li>"
        )
    if not path:
        items.append('<li><a href="#provenance">Provenance</a></li>')
    return "<ul>" + "".join(items) + "</ul>"


def _banner_html(simulated_models: Iterable[str]) -> str:
    names = list(dict.fromkeys(simulated_models))
    if not names:
        return ""
    listed = ", ".join(names)
    return (
        '<div class="sim-banner" role="alert">Results from SIMULATED models — planted traits, '
        f"not real model behaviour: {_esc(listed)}. Their names carry the suffix "
        f"&quot;{_esc(SIM_SUFFIX.strip())}&quot; throughout this report.</div>\n"
    )


def _provenance_html(provenance: dict[str, str]) -> str:
    rows = "".join(f"<dt>{_esc(k)}</dt><dd>{_esc(v)}</dd>" for k, v in provenance.items())
    body = f'<dl class="provenance">{rows}</dl>' if rows else "<p>No provenance recorded.</p>"
    return f'<section id="provenance">\n<h2>Provenance</h2>\n{body}\n</section>\n'


# --------------------------------------------------------------------------- public API


def render_report(report: Report, folder: Path | None = None) -> str:
    """Render `report` as one self-contained HTML document (a pure function of its
    input). With `folder`, where the report is written, each figure links to its file."""
    simulated = frozenset(str(m) for m in report.simulated_models)
    counter = _Counter(folder)
    sections = "".join(
        _section_html(section, (k,), counter, simulated)
        for k, section in enumerate(report.sections, start=1)
    )
    title = _esc(report.title)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{title}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
        f"<h1>{title}</h1>\n"
        f"{_banner_html(report.simulated_models)}"
        f'<nav class="toc"><strong>Contents</strong>{_toc_html(report.sections)}</nav>\n'
        f"{sections}"
        f"{_provenance_html(report.provenance)}"
        "</body>\n</html>\n"
    )


def write_report(report: Report, path: Path) -> Path:
    """Render `report` and write it to `path` atomically (UTF-8). Returns `path`."""
    return write_bytes(render_report(report, Path(path).parent).encode("utf-8"), Path(path))
