"""Figures the papers show, drawn with matplotlib only (Agg, no pyplot state, no seaborn).

The main figure is the generator x evaluator heatmap of seed 000
(`000_dd1ddac0ce03ecfb.txt`, Fig. 4 for the standardised matrix Phi-tilde, Fig. A for raw
Phi): generators on the vertical axis, evaluators on the horizontal axis, every cell
annotated, red for high and blue for low, and the self-evaluation cells (the philautia
scores) outlined. `interval_plot` shows philautia scores with bootstrap intervals.

Why the details below:
- Figures are built on a bare `matplotlib.figure.Figure` rather than `pyplot`, so no global
  figure registry is touched: safe in parallel jobs and never leaks memory across calls.
- PNGs are written without a "Software" tag and Agg output is otherwise free of timestamps,
  so the same input gives byte-identical files and DVC / Snakemake see no spurious change.
- Writes are atomic (temporary file in the same directory, then `os.replace`), so an
  interrupted job never leaves a half-written figure that looks complete (docs/design.md
  principle 4).
- Models that are simulated get a " (sim)" suffix on every label, because reports must say
  plainly when a model is simulated (docs/design.md principle 7).
- Every PNG carries the box of each text line matplotlib drew into it (a zTXt chunk, see
  `text_layout`), measured by the renderer that drew the pixels. A figure is a picture, so
  a browser cannot see its text; with the boxes, a test can check that no label overlaps
  another and none is too small to read at the size the report shows the figure
  (tests/helpers/report_browser.py).
"""

from __future__ import annotations

import io
import json
import math
import struct
import zlib
from collections.abc import Iterable, Iterator, Sequence, Set
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.colors import Colormap, Normalize
from matplotlib.figure import Figure as MplFigure
from matplotlib.patches import Rectangle

from judgebias.io.artifacts import write_bytes

SIM_SUFFIX = " (sim)"
"""Appended to the display name of every simulated model, in figures and in the report."""

DIVERGING_CMAP = "RdBu_r"
"""Red = above the mean, blue = below, white = 0; the look of seed 000 Fig. 4."""

SEQUENTIAL_CMAP = "Reds"
"""Raw Phi is a mean score in [0, 1], not centred, so a one-hue map reads best."""

DPI = 150

# Fixed PNG metadata: matplotlib writes "Software: matplotlib version ..." by default;
# dropping it keeps bytes identical across otherwise identical renders.
_PNG_METADATA: dict[str, str | None] = {"Software": None}

INTERVAL_COLUMNS = ("model", "estimate", "ci_low", "ci_high")

TEXT_LAYOUT_KEY = "judgebias text layout"
"""Keyword of the PNG chunk that lists every text line drawn in a figure (`text_layout`)."""


# --------------------------------------------------------------------------- helpers


def display_name(name: object, simulated: Iterable[str] | None = None) -> str:
    """Return the label to show for a model: its name, plus " (sim)" if it is simulated."""
    text = str(name)
    if simulated is not None and text in set(simulated):
        return text + SIM_SUFFIX
    return text


def save_figure(fig: MplFigure, path: Path, *, photographs: bool = False) -> Path:
    """Render `fig` to PNG bytes in memory, with the layout of its text (`text_layout`),
    then write them atomically.

    A chart is stored with a 256-colour palette (median cut): its flat fills, lines and
    text need no more, and the file is about a third the size, which keeps the report
    small. A figure that shows `photographs` keeps every colour."""
    buffer = io.BytesIO()
    with _recording_text(fig) as layout:
        fig.savefig(buffer, format="png", dpi=DPI, metadata=_PNG_METADATA,
                    bbox_inches="tight")
    png = buffer.getvalue() if photographs else _palette_png(buffer.getvalue())
    data = json.dumps(layout, separators=(",", ":"), ensure_ascii=True)
    return write_bytes(png_with_text_chunk(png, TEXT_LAYOUT_KEY, data), Path(path))


def _palette_png(png: bytes) -> bytes:
    """The image with at most 256 colours (median cut, deterministic), as PNG."""
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        palette = image.convert("RGB").quantize(256, method=Image.Quantize.MEDIANCUT)
    out = io.BytesIO()
    palette.save(out, format="PNG", optimize=True)
    return out.getvalue()


def text_layout(png: bytes) -> dict | None:
    """The text layout `save_figure` stored in a PNG, or None if it has none.

    {"width": w, "height": h, "texts": [{"text": line, "px": font size in pixels,
    "box": four corners [x, y]}]}: every text line the renderer drew, its box rotated with
    it (glyph ascent to descent), in the PNG's pixels with y pointing down."""
    from PIL import Image, PngImagePlugin

    with Image.open(io.BytesIO(png)) as image:
        stored = (image.text.get(TEXT_LAYOUT_KEY)
                  if isinstance(image, PngImagePlugin.PngImageFile) else None)
    return None if stored is None else json.loads(stored)


def png_with_text_chunk(png: bytes, key: str, text: str) -> bytes:
    """`png` with a compressed text chunk (zTXt, PNG spec 11.3.4.4) before its IEND."""
    body = key.encode("latin-1") + b"\0\0" + zlib.compress(text.encode("latin-1"), 9)
    chunk = (struct.pack(">I", len(body)) + b"zTXt" + body
             + struct.pack(">I", zlib.crc32(b"zTXt" + body)))
    end = png.rindex(b"IEND") - 4  # the IEND chunk starts with its 4-byte length
    return png[:end] + chunk + png[end:]


@contextmanager
def _recording_text(fig: MplFigure) -> Iterator[dict]:
    """While `fig` is saved, record every text line its renderer draws.

    `savefig(bbox_inches="tight")` draws twice (once to measure, once into the cropped
    canvas); each draw starts the record afresh, so what is left describes the pixels that
    were written. The renderer's own `draw_text` is wrapped for the draw and put back."""
    layout: dict = {"width": 0, "height": 0, "texts": []}

    def draw(renderer) -> None:
        width, height = renderer.get_canvas_width_height()
        layout.update(width=int(width), height=int(height), texts=[])
        own = "draw_text" in vars(renderer)  # savefig's dry run swaps in a no-op
        real = renderer.draw_text

        def draw_text(gc, x, y, s, prop, angle, ismath=False, mtext=None):
            if s.strip():
                layout["texts"].append(_text_box(renderer, x, y, s, prop, angle, ismath))
            return real(gc, x, y, s, prop, angle, ismath=ismath, mtext=mtext)

        renderer.draw_text = draw_text
        try:
            MplFigure.draw(fig, renderer)
        finally:
            if own:
                renderer.draw_text = real
            else:
                del renderer.draw_text

    fig.draw = draw  # type: ignore[method-assign]  # for this save only, removed below
    try:
        yield layout
    finally:
        del fig.draw


def _text_box(renderer, x: float, y: float, text: str, prop, angle: float,
              ismath: bool | str) -> dict:
    """One drawn line: its font size in pixels and the corners of its box.

    The renderer gets the left end of the baseline at (x, y) (y down) and the angle in
    degrees counter-clockwise; the box runs from the descent below the baseline to the
    ascent above it, along the line's width."""
    width, height, descent = renderer.get_text_width_height_descent(text, prop, ismath)
    cos, sin = math.cos(math.radians(angle)), math.sin(math.radians(angle))
    corners = ((0, -descent), (width, -descent), (width, height - descent),
               (0, height - descent))
    return {"text": text,
            "px": round(float(renderer.points_to_pixels(prop.get_size_in_points())), 2),
            "box": [[round(x + u * cos - v * sin, 1), round(y - (u * sin + v * cos), 1)]
                    for u, v in corners]}


def color_limits(values: np.ndarray, *, diverging: bool) -> tuple[float, float]:
    """Colour limits for a heatmap.

    Diverging maps get symmetric limits (-m, m) so that 0 is white and a red cell is as far
    above the mean as an equally dark blue one is below it. Sequential maps span the finite
    data range. Degenerate inputs (all NaN, constant) get a small non-empty range so the
    normaliser never divides by zero.
    """
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return (-1.0, 1.0) if diverging else (0.0, 1.0)
    if diverging:
        bound = float(np.max(np.abs(finite)))
        bound = bound if bound > 0 else 1.0
        return -bound, bound
    low, high = float(np.min(finite)), float(np.max(finite))
    if high <= low:
        pad = abs(low) * 0.05 or 0.5
        return low - pad, high + pad
    return low, high


def _text_color(rgba: Sequence[float]) -> str:
    """Black on light cells, white on dark ones (relative luminance, ITU-R BT.709)."""
    red, green, blue = rgba[:3]
    luminance = 0.2126 * red + 0.7152 * green + 0.0722 * blue
    return "black" if luminance > 0.5 else "white"


def _font_sizes(n_rows: int, n_cols: int) -> tuple[float, float]:
    """(annotation, tick) font sizes that stay legible from 6 up to ~14 models."""
    n = max(n_rows, n_cols)
    if n <= 8:
        return 9.0, 10.0
    if n <= 12:
        return 7.5, 9.0
    return 6.5, 8.5


def _format_cell(value: float, value_fmt: str) -> str:
    """Cell annotation text; missing cells show an en dash instead of 'nan'."""
    if not math.isfinite(value):
        return "–"
    text = format(value, value_fmt)
    return _strip_negative_zero(text)


def _strip_negative_zero(text: str) -> str:
    """Turn "-0.00" into "0.00": a tiny negative value rounded to zero is not negative."""
    if text.startswith("-") and not any(ch in "123456789" for ch in text):
        return text[1:]
    return text


def self_cells(rows: Sequence[str], cols: Sequence[str]) -> list[tuple[int, int]]:
    """(row, col) positions of self-evaluation cells: generator name == evaluator name.

    Matching by name, not position, keeps the outline right when the matrix has an extra
    row or column (e.g. a Pomms evaluator) or a different order. If no name appears on both
    axes the positional diagonal is used, for matrices whose axes are unnamed.
    """
    col_pos = {name: j for j, name in enumerate(cols)}
    cells = [(i, col_pos[name]) for i, name in enumerate(rows) if name in col_pos]
    if cells:
        return cells
    return [(k, k) for k in range(min(len(rows), len(cols)))]


def _numeric_values(matrix: pd.DataFrame) -> np.ndarray:
    """The matrix as floats, with an error naming the offending column if it is not numeric."""
    if matrix.empty:
        raise ValueError("heatmap: the matrix is empty")
    try:
        return matrix.to_numpy(dtype=float)
    except (TypeError, ValueError) as exc:
        bad = [str(c) for c in matrix.columns if not pd.api.types.is_numeric_dtype(matrix[c])]
        raise ValueError(f"heatmap: non-numeric columns {bad}") from exc


# --------------------------------------------------------------------------- heatmap


def _draw_cells(
    ax, values: np.ndarray, cmap: Colormap, norm: Normalize, value_fmt: str, fontsize: float
) -> None:
    """Annotate every cell with its value, in a colour readable on that cell."""
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            value = values[i, j]
            color = _text_color(cmap(norm(value))) if math.isfinite(value) else "black"
            ax.text(
                j,
                i,
                _format_cell(value, value_fmt),
                ha="center",
                va="center",
                fontsize=fontsize,
                color=color,
            )


def _outline_cells(ax, cells: Iterable[tuple[int, int]]) -> None:
    """Draw a black box around each given cell (the philautia diagonal)."""
    for i, j in cells:
        ax.add_patch(
            Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="black", linewidth=2.0)
        )


def heatmap(
    matrix: pd.DataFrame,
    path: Path,
    title: str,
    *,
    diverging: bool,
    value_fmt: str = ".2f",
    simulated: Set[str] | None = None,
    row_label: str = "Generator",
    col_label: str = "Evaluator",
    highlight_diagonal: bool = False,
    colorbar_label: str | None = None,
) -> Path:
    """Draw a generator x evaluator matrix as an annotated heatmap and write it as PNG.

    Rows (generators) run down the vertical axis, columns (evaluators) along the
    horizontal axis, as in seed 000 Fig. 4 / Fig. A. `diverging=True` is for Phi-tilde:
    "RdBu_r" centred at 0 with symmetric limits. `diverging=False` is for raw Phi: a
    sequential map over the data range. NaN cells are grey and annotated with a dash.
    With `highlight_diagonal`, the self-evaluation cells are outlined (see `self_cells`).
    Returns `path`.
    """
    values = _numeric_values(matrix)
    rows = [str(r) for r in matrix.index]
    cols = [str(c) for c in matrix.columns]
    n_rows, n_cols = values.shape
    annot_size, tick_size = _font_sizes(n_rows, n_cols)

    cmap = _colormap(DIVERGING_CMAP if diverging else SEQUENTIAL_CMAP)
    vmin, vmax = color_limits(values, diverging=diverging)
    norm = Normalize(vmin=vmin, vmax=vmax)

    fig = MplFigure(figsize=(max(5.0, 0.7 * n_cols + 3.0), max(4.0, 0.55 * n_rows + 2.0)))
    ax = fig.add_subplot()
    image = ax.imshow(np.ma.masked_invalid(values), cmap=cmap, norm=norm, aspect="auto")
    _draw_cells(ax, values, cmap, norm, value_fmt, annot_size)
    if highlight_diagonal:
        _outline_cells(ax, self_cells(rows, cols))

    ax.set_xticks(range(n_cols), [display_name(c, simulated) for c in cols], fontsize=tick_size)
    ax.set_yticks(range(n_rows), [display_name(r, simulated) for r in rows], fontsize=tick_size)
    for label in ax.get_xticklabels():
        label.set_rotation(45)
        label.set_horizontalalignment("right")
        label.set_rotation_mode("anchor")
    ax.set_xlabel(col_label)
    ax.set_ylabel(row_label)
    ax.set_title(title)
    colorbar = fig.colorbar(image, ax=ax, fraction=0.046, pad=0.03)
    if colorbar_label:
        colorbar.set_label(colorbar_label)
    return save_figure(fig, path)


def _colormap(name: str) -> Colormap:
    """A copy of a registered colormap with light grey for masked (NaN) cells."""
    return colormaps[name].with_extremes(bad="#d9d9d9")


# --------------------------------------------------------------------------- intervals


def _check_intervals(estimates: pd.DataFrame) -> pd.DataFrame:
    """Validate the interval table; errors name the missing column or the bad model."""
    missing = [c for c in INTERVAL_COLUMNS if c not in estimates.columns]
    if missing:
        raise ValueError(f"interval_plot: missing columns {missing}; expected {INTERVAL_COLUMNS}")
    if estimates.empty:
        raise ValueError("interval_plot: no rows to plot")
    frame = estimates.loc[:, list(INTERVAL_COLUMNS)].copy()
    for column in INTERVAL_COLUMNS[1:]:
        frame[column] = pd.to_numeric(frame[column], errors="raise").astype(float)
    # ci_low <= ci_high only: a percentile bootstrap interval need not hold its own
    # estimate (a skewed resampling distribution on few images: the philautia score of a
    # run stopped after its first wave), and the figure draws it as it is
    bad = frame[frame["ci_low"] > frame["ci_high"]]
    if not bad.empty:
        raise ValueError(
            "interval_plot: need ci_low <= ci_high; violated for "
            f"{[str(m) for m in bad['model']]}"
        )
    return frame.reset_index(drop=True)


def interval_plot(
    estimates: pd.DataFrame,
    path: Path,
    title: str,
    simulated: Set[str] | None = None,
    *,
    xlabel: str = "philautia score",
) -> Path:
    """Horizontal dot-and-errorbar chart of estimates with intervals (e.g. bootstrap CIs).

    `estimates` needs columns model, estimate, ci_low, ci_high; models are listed top to
    bottom in the frame's order. The vertical line at 0 marks "no self-preference": an
    interval entirely right of it is evidence of philautia. Returns `path`.
    """
    frame = _check_intervals(estimates)
    n = len(frame)
    positions = np.arange(n)

    fig = MplFigure(figsize=(6.5, max(2.5, 0.4 * n + 1.5)))
    ax = fig.add_subplot()
    ax.axvline(0.0, color="grey", linestyle="--", linewidth=1.0, zorder=1)
    ax.hlines(positions, frame["ci_low"], frame["ci_high"], color="#404040", linewidth=1.5,
              zorder=2)
    for end in ("ci_low", "ci_high"):
        ax.plot(frame[end], positions, "|", color="#404040", markersize=8, zorder=2)
    ax.plot(frame["estimate"], positions, "o", color="#b2182b", markersize=6, zorder=3)
    ax.set_yticks(positions, [display_name(m, simulated) for m in frame["model"]])
    ax.set_ylim(n - 0.5, -0.5)  # first row at the top, as in the table beside it
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    ax.grid(axis="x", color="#e0e0e0", linewidth=0.8)
    ax.set_axisbelow(True)
    return save_figure(fig, path)
