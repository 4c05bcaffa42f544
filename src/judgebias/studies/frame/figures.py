"""FRAME's figures (seed 004): Fig. 2 (attack success rate and mean gain of successful
attacks per judge), Fig. 3 (pairwise win rates before and after manipulating set A), the
example gallery (each manipulation next to the judges' scores) and the in-sample-max
null (ours). Bare matplotlib Figures written atomically, as in judgebias.report.figures."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure as MplFigure
from PIL import Image

from judgebias.report.figures import display_name, save_figure
from judgebias.studies.frame.recipes import DOMAIN_TITLES, ORIGINAL, SHORT_NAMES

READINGS = {"in_sample": ("#d62728", "in-sample (the paper's)"),
            "cross_fitted": ("#1f77b4", "setting chosen on half the items")}


def fig2(success: pd.DataFrame, simulated: set[str], path: Path) -> None:
    """Seed 004 Fig. 2: attack success rate (left, each bar with the chance level a judge
    with no visual bias has under the same rule as a black tick) and mean % change over
    successful cells (right) per judge, the paper's in-sample reading next to the gain of
    a setting chosen on half the items."""
    judges = list(dict.fromkeys(success["judge"]))
    fig = MplFigure(figsize=(9, 0.5 * len(judges) + 1.6))
    x = np.arange(len(judges))
    for col, (column, label) in enumerate((("success_rate", "attack success rate (%)"),
                                           ("mean_gain", "mean % change, successful cells"))):
        ax = fig.add_subplot(1, 2, col + 1)
        for offset, (reading, (color, name)) in zip((-0.2, 0.2), READINGS.items(), strict=True):
            values = success[success["reading"] == reading].set_index("judge").reindex(
                judges)[column].to_numpy(dtype=float)
            ax.barh(x + offset, values, height=0.38, color=color, label=name)
            if column == "success_rate" and "chance_rate" in success:
                chance = success[success["reading"] == reading].set_index("judge").reindex(
                    judges)["chance_rate"].to_numpy(dtype=float)
                ax.plot(chance, x + offset, "k|", ms=11, mew=1.6,
                        label="chance (no visual bias)" if reading == "in_sample" else None)
        ax.set_yticks(x, [display_name(j, simulated) for j in judges], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel(label, fontsize=9)
        if col == 0:
            ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    save_figure(fig, path)


def fig3(rates: pd.DataFrame, judge: str, simulated: set[str], path: Path) -> None:
    """Seed 004 Fig. 3: per domain, A's and B's win rates (win 1, tie 1/2, both orders
    averaged) for the originals (top) and with set A manipulated (bottom)."""
    mine = rates[rates["judge"] == judge]
    domains = [d for d in DOMAIN_TITLES if d in set(mine["domain"])]
    fig = MplFigure(figsize=(7, 4.6))
    for row, condition in enumerate(("original", "manipulated")):
        ax = fig.add_subplot(2, 1, row + 1)
        cell = mine[mine["condition"] == condition].set_index("domain").reindex(domains)
        x = np.arange(len(domains))
        a, b = cell["a_win_rate"].to_numpy(float), cell["b_win_rate"].to_numpy(float)
        ax.bar(x - 0.2, a, width=0.38, color="#d62728", label="set A")
        ax.bar(x + 0.2, b, width=0.38, color="#7f7f7f", label="set B")
        ax.set_xticks(x, [DOMAIN_TITLES[d] for d in domains], fontsize=8)
        ax.set_ylim(0, 1)
        ax.axhline(0.5, color="black", lw=0.6, ls=":")
        title = "original A vs B" if condition == "original" else "manipulated A vs B"
        ax.set_title(f"{display_name(judge, simulated)}: {title}", fontsize=9)
        ax.legend(fontsize=7, ncol=2, loc="upper right")
    fig.tight_layout()
    save_figure(fig, path)


def null_figure(cross: pd.DataFrame, simulated: set[str], path: Path) -> None:
    """Ours: per judge and cell, the paper's in-sample maximum gain, the 95th percentile
    of its permutation null (what a judge with no susceptibility "gains" by picking the
    best of the grid on the same items), the gain of a setting chosen on half the items
    with its t-interval, and the simultaneous 95 % interval for the best setting's effect
    (green; infinite ends, a grid without spread, are left open). Cells are grouped by
    domain (named above each group), the manipulation below."""
    judges = list(dict.fromkeys(cross["judge"]))
    fig = MplFigure(figsize=(10, 2.9 * len(judges)))
    for row, judge in enumerate(judges):
        ax = fig.add_subplot(len(judges), 1, row + 1)
        cell = cross[cross["judge"] == judge].reset_index(drop=True)
        x = np.arange(len(cell))
        ax.bar(x, cell["in_sample_gain"], color="#d62728", alpha=0.6, label="in-sample max")
        ax.plot(x, cell["null_q95"], "k_", ms=10, label="null 95th pct. of the max")
        ax.errorbar(x - 0.12, cell["cross_fitted_gain"],
                    yerr=[cell["cross_fitted_gain"] - cell["ci_low"],
                          cell["ci_high"] - cell["cross_fitted_gain"]],
                    fmt="o", color="#1f77b4", ms=3, lw=0.8,
                    label="setting chosen on half the items (95% CI)")
        finite = cell[["best_low", "best_high"]].replace([np.inf, -np.inf], np.nan)
        ax.vlines(x + 0.18, finite["best_low"], finite["best_high"], color="#2ca02c",
                  lw=1.4, label="best setting's effect (simultaneous 95%)")
        ax.axhline(0, color="black", lw=0.5)
        ax.set_xticks(x, [SHORT_NAMES[m].rstrip(".") for m in cell["manipulation"]],
                      rotation=90, fontsize=8)
        ax.set_xlim(-0.6, len(cell) - 0.4)
        _domain_groups(ax, list(cell["domain"]))
        ax.set_ylabel("score change", fontsize=8)
        ax.tick_params(axis="y", labelsize=8)
        ax.set_title(display_name(judge, simulated), fontsize=9)
        if row == 0:
            ax.legend(fontsize=8, ncol=2, loc="lower left", bbox_to_anchor=(0, 1.25),
                      frameon=False)
    fig.tight_layout()
    save_figure(fig, path)


def _domain_groups(ax, domains: list[str]) -> None:
    """Name each run of cells of one domain on a top axis, and separate the runs."""
    starts = [i for i, d in enumerate(domains) if i == 0 or d != domains[i - 1]]
    ends = [*starts[1:], len(domains)]
    top = ax.secondary_xaxis("top")
    top.set_xticks([(a + b - 1) / 2 for a, b in zip(starts, ends, strict=True)],
                   [DOMAIN_TITLES.get(domains[a], domains[a]) for a in starts], fontsize=8)
    top.tick_params(length=0)
    for boundary in starts[1:]:
        ax.axvline(boundary - 0.5, color="#bbbbbb", lw=0.8)


# Gallery geometry (inches and points): each cell is one image above its judges' scores,
# one line per judge, sized to the longest line so neighbouring cells never touch.
SCORE_PT, LABEL_PT = 7.5, 8.5
def gallery(n: int, items: pd.DataFrame, scores: pd.DataFrame, best: pd.DataFrame,
            renders: pd.DataFrame) -> pd.DataFrame:
    """Example items (`n` per domain, frame.analysis.examples: the first ids) with the
    original and each manipulation at the analysis judge's best setting, and every
    judge's score."""
    chosen = items.sort_values("item_id").groupby("domain", sort=False).head(n)
    standard = scores[scores["prompt"] == "standard"]
    rows = []
    for item in chosen.itertuples():
        shown = [(ORIGINAL, "Orig.", item.image)]
        mine = best[best["domain"] == item.domain]
        for recipe, manipulation in zip(mine["recipe"], mine["manipulation"], strict=True):
            found = renders[(renders["item_id"] == item.item_id)
                            & (renders["recipe"] == recipe) & (renders["status"] == "ok")]
            if not found.empty:
                shown.append((recipe, SHORT_NAMES[manipulation], found["image"].iloc[0]))
        for recipe, label, image in shown:
            got = standard[(standard["item_id"] == item.item_id)
                           & (standard["recipe"] == recipe)]
            text = " ".join(f"{j}:{s:.1f}" for j, s in zip(got["judge"], got["score"],
                                                            strict=True) if pd.notna(s))
            rows.append({"item_id": item.item_id, "domain": item.domain, "recipe": recipe,
                         "label": label, "image": image, "scores": text})
    return pd.DataFrame(rows, columns=["item_id", "domain", "recipe", "label", "image",
                                       "scores"])


CHAR_WIDTH = 0.56  # DejaVu Sans: ~0.53 em per character of a judge name and score
ROW_LABEL_IN, HEADER_IN, GAP_IN = 0.85, 0.32, 0.14


def examples(gallery: pd.DataFrame, simulated: set[str], path: Path) -> None:
    """Example images: per example item (rows), the original and each manipulation at
    the analysis judge's best setting (columns, named once at the top), each image above
    every judge's score, one judge per line."""
    rows = list(dict.fromkeys(gallery["item_id"]))
    columns = list(dict.fromkeys(gallery["label"]))
    cells = {(e.item_id, e.label): e for e in gallery.itertuples()}
    scores = {key: _scores(e.scores, simulated) for key, e in cells.items()}
    lines = max((len(v) for v in scores.values()), default=0)
    longest = max((len(j) + len(s) + 2 for v in scores.values() for j, s in v), default=8)
    cell_w = max(1.2, longest * SCORE_PT * CHAR_WIDTH / 72 + 0.12)
    image_h = cell_w - 0.12
    row_h = image_h + lines * SCORE_PT * 1.3 / 72 + GAP_IN + 0.06
    width, height = ROW_LABEL_IN + cell_w * len(columns), HEADER_IN + row_h * len(rows)
    fig = MplFigure(figsize=(width, height))
    for c, label in enumerate(columns):
        fig.text((ROW_LABEL_IN + (c + 0.5) * cell_w) / width, 1 - 0.5 * HEADER_IN / height,
                 label, ha="center", va="center", fontsize=LABEL_PT, weight="bold")
    for r, item in enumerate(rows):
        top = height - HEADER_IN - r * row_h
        domain = gallery.loc[gallery["item_id"] == item, "domain"].iloc[0]
        fig.text(0.05 / width, (top - image_h / 2) / height,
                 f"{DOMAIN_TITLES.get(domain, domain)}\n{item}", ha="left", va="center",
                 fontsize=LABEL_PT)
        for c, label in enumerate(columns):
            if (item, label) not in cells:
                continue
            left = ROW_LABEL_IN + c * cell_w + 0.06
            ax = fig.add_axes(((left) / width, (top - image_h) / height,
                               (cell_w - 0.12) / width, image_h / height))
            ax.imshow(np.asarray(Image.open(cells[item, label].image).convert("RGB")))
            ax.axis("off")
            for k, (judge, score) in enumerate(scores[item, label]):
                y = (top - image_h - 0.04 - k * SCORE_PT * 1.3 / 72) / height
                fig.text(left / width, y, judge, ha="left", va="top", fontsize=SCORE_PT)
                fig.text((left + cell_w - 0.12) / width, y, score, ha="right", va="top",
                         fontsize=SCORE_PT)
    save_figure(fig, path, photographs=True)


def _scores(text: str, simulated: set[str]) -> list[tuple[str, str]]:
    """"judge:score judge:score" (the gallery table's cell) as (shown name, score)."""
    pairs = [entry.rsplit(":", 1) for entry in text.split()]
    return [(display_name(judge, simulated), score) for judge, score in pairs]
