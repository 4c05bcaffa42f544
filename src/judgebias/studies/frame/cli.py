"""FRAME's CLI steps, one per rule. Each handler imports only the step module it runs: a
rule's code dependencies are derived from these imports (judgebias.workflow.codedeps)."""

from __future__ import annotations

import argparse
from pathlib import Path

from judgebias.config import load_config


def _concepts(args: argparse.Namespace) -> None:
    from judgebias.studies.frame.build import build_concepts

    build_concepts(load_config(args.params), args.out)


def _instructions(args: argparse.Namespace) -> None:
    from judgebias.studies.frame.build import build_instructions

    build_instructions(load_config(args.params), args.concepts, args.out)


def _images(args: argparse.Namespace) -> None:
    from judgebias.studies.frame.build import build_images

    build_images(load_config(args.params), args.instructions, args.out, Path(args.images))


def _items(args: argparse.Namespace) -> None:
    from judgebias.studies.frame.build import build_items

    build_items(load_config(args.params), args.generated, args.out, args.summary)


def _render(args: argparse.Namespace) -> None:
    from judgebias.studies.frame.steps import render_grid

    render_grid(load_config(args.params), args.manipulation, args.items, args.out,
                Path(args.out_dir))


def _score(args: argparse.Namespace) -> None:
    from judgebias.studies.frame.steps import score_set

    score_set(load_config(args.params), args.judge, args.items, args.renders, args.out)


def _recipes(args: argparse.Namespace) -> None:
    from judgebias.artifacts import write_frame
    from judgebias.studies.frame.steps import best_recipes

    write_frame(best_recipes(load_config(args.params), args.judge, args.scores), args.out)


def _combine(args: argparse.Namespace) -> None:
    from judgebias.studies.frame.steps import render_combinations

    render_combinations(load_config(args.params), args.items, args.recipes, args.out,
                        Path(args.out_dir))


def _mitigation(args: argparse.Namespace) -> None:
    from judgebias.studies.frame.steps import mitigation

    mitigation(load_config(args.params), args.judge, args.items, args.recipes, args.renders,
               args.out)


def _pairwise(args: argparse.Namespace) -> None:
    from judgebias.studies.frame.steps import pairwise

    pairwise(load_config(args.params), args.judge, args.items, args.recipes, args.renders,
             args.out)


def _presets_render(args: argparse.Namespace) -> None:
    from judgebias.studies.frame.presets_analysis import render_presets

    render_presets(load_config(args.params), args.items, args.out, Path(args.out_dir))


def _presets(args: argparse.Namespace) -> None:
    from judgebias.studies.frame.presets_analysis import analyse_presets

    analyse_presets(load_config(args.params), args.scores, args.out)


def _analysis(args: argparse.Namespace) -> None:
    from judgebias.studies.frame.analysis import analyse

    analyse(load_config(args.params), args.items, args.scores, args.recipes, args.mitigation,
            args.combinations, args.pairwise, args.renders, Path(args.out_dir))


def register(add) -> None:
    """Add the FRAME steps to the `judgebias` command."""
    p = add("frame-concepts", _concepts, "FRAME §4.1: sample and perturb Table 8 concepts")
    p.add_argument("--out", required=True)
    p = add("frame-instructions", _instructions, "FRAME §4.1: instructions from the concepts "
            "(template or a writer model)")
    for flag in ("--concepts", "--out"):
        p.add_argument(flag, required=True)
    p = add("frame-images", _images, "FRAME §4.1: images of the perturbed prompts, sets A "
            "and B (offline renderer, OpenAI images, diffusers)")
    for flag in ("--instructions", "--out", "--images"):
        p.add_argument(flag, required=True)
    p = add("frame-items", _items, "FRAME's item table: human scores attached or imported")
    p.add_argument("--generated")
    for flag in ("--out", "--summary"):
        p.add_argument(flag, required=True)
    p = add("frame-render", _render, "render one manipulation's grid (cached per image)")
    for flag in ("--manipulation", "--items", "--out", "--out-dir"):
        p.add_argument(flag, required=True)
    p = add("frame-score", _score, "score the originals or one render set (Fig. 4 prompt)")
    p.add_argument("--renders")
    for flag in ("--judge", "--items", "--out"):
        p.add_argument(flag, required=True)
    p = add("frame-recipes", _recipes, "a judge's best setting per domain and manipulation")
    p.add_argument("--scores", nargs="+", required=True)
    for flag in ("--judge", "--out"):
        p.add_argument(flag, required=True)
    p = add("frame-combine", _combine, "render pairs and triples of the best recipes")
    for flag in ("--items", "--recipes", "--out", "--out-dir"):
        p.add_argument(flag, required=True)
    p = add("frame-mitigation", _mitigation, "Table 5: the mitigation prompts")
    p.add_argument("--renders", nargs="+", required=True)
    for flag in ("--judge", "--items", "--recipes", "--out"):
        p.add_argument(flag, required=True)
    p = add("frame-pairwise", _pairwise, "Fig. 3: set A (original, manipulated) vs set B")
    for flag in ("--judge", "--items", "--recipes", "--renders", "--out"):
        p.add_argument(flag, required=True)
    p = add("frame-presets-render", _presets_render, "render the paper's recipes (Tables "
            "9-10) for frame.presets: paper")
    for flag in ("--items", "--out", "--out-dir"):
        p.add_argument(flag, required=True)
    p = add("frame-presets", _presets, "every judge at the paper's recipes: paired "
            "intervals and exact tests, no selection")
    p.add_argument("--scores", nargs="+", required=True)
    p.add_argument("--out", required=True)
    p = add("frame-analysis", _analysis, "Tables 2-7, 9-12, Figs. 2-3, significance")
    for flag in ("--scores", "--recipes", "--renders"):
        p.add_argument(flag, nargs="+", required=True)
    for flag in ("--items", "--mitigation", "--combinations", "--pairwise", "--out-dir"):
        p.add_argument(flag, required=True)
