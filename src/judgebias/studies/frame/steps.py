"""FRAME's steps, one per rule of workflow/rules/frame.smk (judgebias.workflow.step_dispatch): each
reads the files its rule names, calls the study's functions and writes the files its rule names
(seed 004 §4.1 benchmark, §5-6 renders, scores and follow-ups, then the tables).

A step imports what only it uses inside its body, so its rule's code dependencies
(derived from those imports) stay its own. The benchmark is judgebias.studies.frame.data,
the model jobs .jobs, the renders .render, the statistics .measures, the figures .figures.
Every step also depends on .params (the typed view `FrameParams`) and what it imports; a
model job's step also takes the run context (`RunContext`: the journal, the panel models),
never the params mapping.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from judgebias.models.context import RunContext
from judgebias.studies.frame.params import FrameParams, Synthetic
from judgebias.studies.frame.tables import ITEMS, RENDERS, SCORES, read_renders

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)


def concepts(params: FrameParams, *, concepts: Path) -> None:
    """§4.1 stage 1: sample and perturb Table 8 concepts (data.draw_concepts)."""
    from judgebias.io.artifacts import write_frame
    from judgebias.studies.frame.data import draw_concepts

    block = _synthetic(params)
    write_frame(draw_concepts(block.n_per_domain, block.k_weights, seed=block.seed,
                              domains=block.domains), concepts)


def _synthetic(params: FrameParams) -> Synthetic:
    """The synthetic benchmark's block (the rules that build it run only when it is named)."""
    if params.dataset.synthetic is None:
        raise ValueError("frame.dataset.synthetic: required to build the synthetic benchmark")
    return params.dataset.synthetic


def instructions(params: FrameParams, run: RunContext, *, concepts: Path,
                 instructions: Path) -> None:
    """§4.1 stage 2: the instruction judged and the prompt rendered, by the writer model or
    the template (data.write_instructions)."""
    import pandas as pd

    from judgebias.io.artifacts import write_frame
    from judgebias.studies.frame.data import write_instructions

    writer = _synthetic(params).writer
    write_frame(write_instructions(run, pd.read_parquet(concepts), writer), instructions)


def images(params: FrameParams, *, instructions: Path, generated: Path, images: Path
           ) -> None:
    """§4.1 stage 3: set A and set B images of every usable item (data.generate_images)."""
    import pandas as pd

    from judgebias.io.artifacts import write_frame
    from judgebias.studies.frame.data import generate_images

    block = _synthetic(params)
    write_frame(generate_images(pd.read_parquet(instructions), images,
                                dataclasses.asdict(block.images), block.seed), generated)


def items(params: FrameParams, *, generated: Path | None = None, benchmark: Path,
          summary: Path) -> None:
    """The item table: the constructed benchmark (`generated`) with simulated annotators,
    or the imported FRAME table (``frame.dataset.table``)."""
    import pandas as pd

    from judgebias.config import input_errors
    from judgebias.io.artifacts import write_json, write_table
    from judgebias.studies.frame.data import attach_humans, read_frame_table

    if params.dataset.name == "table":
        imported = params.dataset.table
        assert imported is not None, "frame.dataset.table is not given"
        with input_errors("frame.dataset.table"):
            table = read_frame_table(imported.path, imported.image_root)
        description = f"FRAME table {imported.path}"
    else:
        block = _synthetic(params)
        annotators = block.annotators
        with input_errors("frame.dataset.synthetic.annotators.scores"):
            table = attach_humans(pd.read_parquet(generated), sds=annotators.sds,
                                  bias=annotators.bias, seed=block.seed,
                                  scores=annotators.scores)
        description = (f"synthetic FRAME benchmark: {block.n_per_domain} items per domain, "
                       f"images by the {block.images.backend} renderer, "
                       + ("imported human scores" if annotators.scores
                          else "two simulated annotators"))
    write_table(table, benchmark, ITEMS)
    write_json({"description": description, "items": len(table),
                "per_domain": table["domain"].value_counts().to_dict()}, summary)


def render_grid(params: FrameParams, *, manipulation: str, benchmark: Path,
                table: Path, images: Path) -> None:
    """One manipulation's whole grid for every item of the domains it applies to (cached
    per image: render.render)."""
    from judgebias.io.artifacts import read_table, write_table
    from judgebias.studies.frame.render import grid_jobs, render

    shown = read_table(benchmark, ITEMS)
    jobs = grid_jobs(shown, manipulation, params.manipulations.grid(manipulation))
    write_table(render(params, shown, jobs, images), table, RENDERS)


def _score(params: FrameParams, run: RunContext, judge: str, benchmark: Path,
           renders: Path | None, scores: Path) -> None:
    """The standard prompt (Fig. 4) on the originals (`renders` None) or one render set."""
    from judgebias.io.artifacts import read_table, write_table
    from judgebias.studies.frame.jobs import images_to_score, score_images

    table = read_table(benchmark, ITEMS)
    rendered = read_table(renders, RENDERS) if renders else None
    write_table(score_images(run, judge, "standard", images_to_score(table, rendered),
                             prompts=params.prompts), scores, SCORES)


def score(params: FrameParams, run: RunContext, *, frame_judge: str, benchmark: Path,
          renders: Path | None = None, scores: Path) -> None:
    """A judge's standard-prompt scores of the originals or of one render set."""
    _score(params, run, frame_judge, benchmark, renders, scores)


def combinations(params: FrameParams, run: RunContext, *, benchmark: Path, renders: Path,
                 scores: Path) -> None:
    """Tables 6 and 11: the analysis judge's standard-prompt scores of the combined set."""
    _score(params, run, params.analysis_judge, benchmark, renders, scores)


def read_scores(paths: Sequence[Path]) -> pd.DataFrame:
    """Score tables, the analysis columns only."""
    import pandas as pd

    from judgebias.io.artifacts import read_columns

    keys = ["item_id", "domain", "judge", "prompt", "recipe", "manipulation", "setting",
            "n_steps", "named", "score", "status"]
    frames = [read_columns(p, SCORES, keys) for p in paths]
    scores = pd.concat(frames, ignore_index=True)
    scores["score"] = scores["score"].astype(float)
    return scores


def recipes(params: FrameParams, *, frame_judge: str, scores: Sequence[Path],
            recipes: Path) -> None:
    """Seed 004 Tables 9-10: the judge's in-sample best setting per (domain, manipulation),
    as the paper picks it (the recipe its follow-ups use)."""
    from judgebias.io.artifacts import write_frame
    from judgebias.studies.frame.measures.effects import best_settings
    from judgebias.studies.frame.recipes import step

    best = best_settings(read_scores(scores), frame_judge)
    best["recipe"] = [step(m, s).id for m, s in zip(best["manipulation"], best["setting"],
                                                    strict=True)]
    write_frame(best, recipes)


def combine(params: FrameParams, *, benchmark: Path, recipes: Path, table: Path,
            images: Path) -> None:
    """Render pairs and triples of the analysis judge's best recipes (Tables 6 and 11)."""
    import pandas as pd

    from judgebias.io.artifacts import read_table, write_table
    from judgebias.studies.frame.render import combination_jobs, render

    shown = read_table(benchmark, ITEMS)
    best = pd.read_parquet(recipes)
    jobs = combination_jobs(shown, best, params.combinations)
    write_table(render(params, shown, jobs, images), table, RENDERS)


def mitigation(params: FrameParams, run: RunContext, *, benchmark: Path, recipes: Path,
               renders: Sequence[Path], scores: Path) -> None:
    """Table 5: the analysis judge scores with the mitigation prompts (Figs. 5-7), see
    jobs.mitigation_images. With no prompts (``frame.mitigation: []``) the table is empty
    but valid: Table 5 then holds the standard prompt's column alone (issue 39)."""
    import pandas as pd

    from judgebias.io.artifacts import read_table, write_table
    from judgebias.studies.frame.jobs import mitigation_images, score_images

    judge = params.analysis_judge
    shown = mitigation_images(params.mitigation, read_table(benchmark, ITEMS),
                              pd.read_parquet(recipes), read_renders(renders))
    frames = [score_images(run, judge, prompt, images, prompts=params.prompts)
              for prompt, images in shown.items()]
    table = (pd.concat(frames, ignore_index=True) if frames
             else SCORES.empty_table().to_pandas())
    write_table(table, scores, SCORES)


def pairwise(params: FrameParams, run: RunContext, *, benchmark: Path, recipes: Path,
             renders: Path, verdicts: Path) -> None:
    """Fig. 3: the analysis judge compares set A (original, manipulated) with set B (see
    jobs.pairwise_shown)."""
    import pandas as pd

    from judgebias.io.artifacts import read_table, write_table
    from judgebias.studies.frame.jobs import judge_pairs, pairwise_shown
    from judgebias.studies.frame.tables import PAIRWISE

    shown = pairwise_shown(params.pairwise.manipulation, read_table(benchmark, ITEMS),
                           pd.read_parquet(recipes), read_renders([renders]))
    write_table(judge_pairs(run, params.analysis_judge, shown,
                            prompt=params.pairwise.prompt), verdicts, PAIRWISE)


def presets_render(params: FrameParams, *, benchmark: Path, table: Path,
                   images: Path) -> None:
    """Draw (or copy from the render cache: a preset that is also a grid value costs a
    copy) every item's preset recipes (frame.presets: paper, seed 004 Tables 9-10)."""
    from judgebias.io.artifacts import read_table, write_table
    from judgebias.studies.frame.presets import preset_jobs, preset_recipes
    from judgebias.studies.frame.render import render

    shown = read_table(benchmark, ITEMS)
    jobs = preset_jobs(shown, preset_recipes(params.presets, params.preset_judges))
    write_table(render(params, shown, jobs, images), table, RENDERS)


def presets(params: FrameParams, *, scores: Sequence[Path], table: Path) -> None:
    """Every panel judge at the paper's recipes: paired intervals and exact tests, no
    selection (measures.presets)."""
    import pandas as pd

    from judgebias.io.artifacts import write_frame
    from judgebias.studies.frame.measures.presets import preset_effects
    from judgebias.studies.frame.presets import preset_recipes

    read = read_scores(scores)
    chosen = preset_recipes(params.presets, params.preset_judges)
    options = params.analysis
    effects = pd.concat([preset_effects(read, judge, chosen, options.n_permutations,
                                        options.seed) for judge in params.models],
                        ignore_index=True)
    write_frame(effects, table)
    log.info("%d preset cells, %d with q < %g", len(effects),
             int((effects["q_value"] < options.alpha).sum()), options.alpha)


def analysis(params: FrameParams, *, benchmark: Path, scores: Sequence[Path],
             recipes: Sequence[Path], mitigation: Path, combinations: Path, pairwise: Path,
             renders: Sequence[Path], metrics: Path, tables: Sequence[Path],
             figures: Sequence[Path]) -> None:
    """Tables 2-7, 9-12, Figs. 2-3, significance: every table and figure of the report
    from the score tables, as pure computation (measures). Changing an analysis option
    reruns this step only, never a judge call. `tables` and `figures` are written by name
    (tables.TABLES, tables.FIGURES: the file's stem)."""
    import pandas as pd

    from judgebias.io.artifacts import read_table, write_frame, write_json
    from judgebias.judging.values import failed_calls
    from judgebias.studies.frame import figures as draw
    from judgebias.studies.frame.measures import effects, humans, summary
    from judgebias.studies.frame.measures import pairwise as pairs
    from judgebias.studies.frame.tables import PAIRWISE

    judges, analyst = list(params.models), params.analysis_judge
    options = params.analysis
    table_paths = {Path(p).stem: Path(p) for p in tables}
    figure_paths = {Path(p).stem: Path(p) for p in figures}
    items = read_table(benchmark, ITEMS)
    scored = read_scores(scores)
    follow = read_scores([mitigation, combinations])
    verdicts = read_table(pairwise, PAIRWISE)
    best = pd.concat([pd.read_parquet(p) for p in recipes], ignore_index=True)
    rendered = read_renders(renders)

    in_sample = summary.per_judge(effects.in_sample_table, judges, scored)
    cross = summary.per_judge(effects.cross_fitted_table, judges, scored,
                              n_permutations=options.n_permutations, seed=options.seed)
    success = summary.attack_success(in_sample, cross)
    analyst_best = best[best["judge"] == analyst]
    everything = pd.concat([scored, follow], ignore_index=True)
    results = {
        "table2": humans.score_distribution(items),
        "table7": humans.inter_annotator(items),
        "table3_in_sample": in_sample,
        "table3_cross_fitted": cross,
        "attack_success": success,
        "table4": in_sample[in_sample["manipulation"] == "beauty_filter"],
        "table5": effects.mitigation_table(everything, analyst),
        "table6": effects.combinations_table(everything, analyst, analyst_best),
        "recipes": best,
        "combinations": effects.combinations_table(everything, analyst, analyst_best,
                                                   detail=True),
        "win_rates": pairs.win_rates(verdicts),
        "significance": summary.per_judge(effects.paired_tests, judges, scored),
        "human_correlation": humans.human_correlation(
            scored, items, n_resamples=options.n_bootstrap, seed=options.seed),
        "answers": summary.answer_counts(pd.concat([scored, follow], ignore_index=True),
                                         verdicts),
    }
    for name, table in results.items():
        write_frame(table.reset_index(drop=True), table_paths[name])
    simulated = set(params.simulated)
    draw.fig2(success, simulated, figure_paths["fig2"])
    draw.fig3(results["win_rates"], analyst, simulated, figure_paths["fig3"])
    draw.null_figure(cross, simulated, figure_paths["null"])
    draw.examples(draw.gallery(options.examples, items, scored, analyst_best, rendered),
                  simulated, figure_paths["examples"])
    failed = failed_calls(pd.concat([scored, follow, verdicts], ignore_index=True), "judge")
    write_json(summary.metrics(items, results, judges, options.alpha)
               | {"failed_calls": failed}, metrics)
