"""FRAME's pipeline steps after the benchmark: render the manipulations, score them, pick
each judge's best recipe, and the analysis judge's follow-ups (seed 004 §5-6). Each step
reads the files its rule declares and writes its outputs atomically."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from judgebias.artifacts import read_table, write_table
from judgebias.studies.frame.benchmark import ITEMS
from judgebias.studies.frame.recipes import ORIGINAL, applies, parse_recipe, recipe_id, step
from judgebias.studies.frame.tables import RENDERS, SCORES

log = logging.getLogger(__name__)


def render_grid(config: Mapping[str, Any], manipulation: str, items_path: str, out: str,
                out_dir: Path) -> None:
    """One manipulation's whole grid for every item of the domains it applies to."""
    from judgebias.studies.frame.render import grid_jobs, render

    items = read_table(items_path, ITEMS)
    write_table(render(config, items, grid_jobs(config, items, manipulation), out_dir),
                out, RENDERS)


def images_to_score(items: pd.DataFrame, renders: pd.DataFrame | None) -> pd.DataFrame:
    """The originals (renders None) or a render set's images, with what the prompt needs;
    an unavailable render keeps its status and is never asked."""
    columns = ["item_id", "domain", "instruction"]
    if renders is None:
        return items[[*columns, "image"]].assign(recipe=ORIGINAL, status="ok")
    merged = renders.merge(items[columns], on="item_id", how="left")
    return merged[[*columns, "recipe", "image", "status"]]


def score_set(config: Mapping[str, Any], judge: str, items_path: str,
              renders_path: str | None, out: str) -> None:
    """The standard prompt (Fig. 4) on the originals or on one render set."""
    from judgebias.studies.frame.jobs import score_images

    items = read_table(items_path, ITEMS)
    renders = read_table(renders_path, RENDERS) if renders_path else None
    write_table(score_images(config, judge, "standard", images_to_score(items, renders)),
                out, SCORES)


def read_scores(paths: list[str]) -> pd.DataFrame:
    """Score tables, the analysis columns only."""
    from judgebias.artifacts import read_columns

    keys = ["item_id", "domain", "judge", "prompt", "recipe", "manipulation", "setting",
            "n_steps", "named", "score", "status"]
    frames = [read_columns(p, SCORES, keys) for p in paths]
    scores = pd.concat(frames, ignore_index=True)
    scores["score"] = scores["score"].astype(float)
    return scores


def best_recipes(config: Mapping[str, Any], judge: str, score_paths: list[str]) -> pd.DataFrame:
    """Seed 004 Tables 9-10: the judge's in-sample best setting per (domain, manipulation),
    as the paper picks it (the recipe its follow-ups use)."""
    from judgebias.studies.frame.effects import best_settings

    best = best_settings(read_scores(score_paths), judge)
    best["recipe"] = [step(m, s).id for m, s in zip(best["manipulation"], best["setting"],
                                                    strict=True)]
    return best


def combination_jobs(config: Mapping[str, Any], items: pd.DataFrame,
                     best: pd.DataFrame) -> pd.DataFrame:
    """Tables 6 and 11: every pair and triple (frame.combinations) of the analysis judge's
    best single recipes of each domain, for every item of that domain."""
    sizes = config["frame"]["combinations"]
    rows = []
    for domain, chosen in best.groupby("domain", sort=False):
        steps = [step for recipe in chosen["recipe"] for step in parse_recipe(recipe)]
        combos = [recipe_id(list(c)) for size in sizes
                  for c in itertools.combinations(sorted(steps), size)]
        ids = items.loc[items["domain"] == domain, "item_id"]
        rows += [(item, recipe) for item in ids for recipe in combos]
    return pd.DataFrame(rows, columns=["item_id", "recipe"])


def render_combinations(config: Mapping[str, Any], items_path: str, recipes_path: str,
                        out: str, out_dir: Path) -> None:
    from judgebias.studies.frame.render import render

    items = read_table(items_path, ITEMS)
    best = pd.read_parquet(recipes_path)
    write_table(render(config, items, combination_jobs(config, items, best), out_dir),
                out, RENDERS)


def best_images(items: pd.DataFrame, best: pd.DataFrame, render_paths: list[str]
                ) -> pd.DataFrame:
    """The image of each item at its domain's best recipe, for every manipulation (the
    recipe of Table 5 and Fig. 3: seed 004 App. B.3, "Recipe for Analysis")."""
    renders = pd.concat([read_table(p, RENDERS) for p in render_paths], ignore_index=True)
    wanted = items[["item_id", "domain"]].merge(best[["domain", "manipulation", "recipe"]],
                                                on="domain")
    return wanted.merge(renders, on=["item_id", "recipe"])


def mitigation_images(config: Mapping[str, Any], items: pd.DataFrame, best: pd.DataFrame,
                      render_paths: list[str]) -> dict[str, pd.DataFrame]:
    """The images each mitigation prompt scores: the originals and every best recipe. The
    bias-definition prompt scores each original once per manipulation it names, so each
    manipulation is compared with originals told the same thing."""
    manipulated = best_images(items, best, render_paths)
    manipulated = images_to_score(items, manipulated[["item_id", "recipe", "image", "status"]])
    originals = images_to_score(items, None)
    shown = {}
    for prompt in config["frame"]["mitigation"]:
        if prompt == "bias_definition":
            named = [originals.assign(named=m) for m in best["manipulation"].unique()]
            named = [n[[applies(m, d) for m, d in zip(n["named"], n["domain"], strict=True)]]
                     for n in named]
            shown[prompt] = pd.concat([*named, manipulated.assign(
                named=[parse_recipe(r)[0].manipulation for r in manipulated["recipe"]])],
                ignore_index=True)
        else:
            shown[prompt] = pd.concat([originals, manipulated], ignore_index=True)
    return shown


def mitigation(config: Mapping[str, Any], judge: str, items_path: str, recipes_path: str,
               render_paths: list[str], out: str) -> None:
    """Table 5: the mitigation prompts (Figs. 5-7), see :func:`mitigation_images`."""
    from judgebias.studies.frame.jobs import score_images

    shown = mitigation_images(config, read_table(items_path, ITEMS),
                              pd.read_parquet(recipes_path), render_paths)
    frames = [score_images(config, judge, prompt, images) for prompt, images in shown.items()]
    write_table(pd.concat(frames, ignore_index=True), out, SCORES)


def pairwise_shown(config: Mapping[str, Any], items: pd.DataFrame, best: pd.DataFrame,
                   renders_path: str) -> pd.DataFrame:
    """Fig. 3's comparisons: set A against set B, and set A with the pairwise manipulation
    at the judge's best setting per domain against set B; both orders of each."""
    from judgebias.studies.frame.jobs import pairwise_items

    best = best[best["manipulation"] == config["frame"]["pairwise"]["manipulation"]]
    manipulated = best_images(items, best, [renders_path])
    manipulated = manipulated[manipulated["status"] == "ok"]
    originals = items[["item_id", "image"]].assign(recipe=ORIGINAL)
    return pairwise_items(items, {"original": originals, "manipulated": manipulated})


def pairwise(config: Mapping[str, Any], judge: str, items_path: str, recipes_path: str,
             renders_path: str, out: str) -> None:
    """Fig. 3 (see :func:`pairwise_shown`)."""
    from judgebias.studies.frame.jobs import judge_pairs
    from judgebias.studies.frame.tables import PAIRWISE

    items = read_table(items_path, ITEMS)
    shown = pairwise_shown(config, items, pd.read_parquet(recipes_path), renders_path)
    write_table(judge_pairs(config, judge, shown), out, PAIRWISE)
