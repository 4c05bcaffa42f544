"""The philautia study's steps, one per rule of workflow/rules/philautia.smk
(judgebias.workflow.step_dispatch): each reads the files its rule names, calls the study's functions
(judgebias.studies.philautia.measures: Phi, Phi-tilde, tests and intervals of seed 000
§4.1; .selfpref) and writes the files its rule names.

A step imports what only it uses inside its body (or in the helpers below it calls), so
its rule's code dependencies stay its own (judgebias.workflow.codedeps)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from judgebias.models.context import RunContext
from judgebias.studies.philautia.params import PhilautiaParams
from judgebias.studies.philautia.tables import SCORE_SCALE

if TYPE_CHECKING:
    import pandas as pd

    from judgebias.studies.philautia.measures import PhilautiaResult

log = logging.getLogger(__name__)


def dataset(params: PhilautiaParams, *, table: Path, images: Path) -> None:
    """Build the synthetic image dataset or import a real one (``philautia.dataset``)."""
    import dataclasses

    from judgebias.config import input_errors
    from judgebias.io.artifacts import write_table
    from judgebias.studies.philautia.data import build_dataset
    from judgebias.studies.philautia.tables import IMAGES

    with input_errors(f"philautia.dataset.{params.dataset.name}"):
        built = build_dataset(dataclasses.asdict(params.dataset), images)
    write_table(built, table, IMAGES)
    log.info("dataset: %d images -> %s", len(built), table)


def caption(params: PhilautiaParams, run: RunContext, *, generator: str, images: Path,
            captions: Path) -> None:
    """Caption every image of the dataset with one generator (seed 000 Algorithm 1; a
    model job: `run` calls the generator)."""
    from judgebias.io.artifacts import write_table
    from judgebias.studies.philautia.jobs import caption_images
    from judgebias.studies.philautia.tables import CAPTIONS

    write_table(caption_images(run, generator, str(images), prompt=params.caption_prompt),
                captions, CAPTIONS)


def score(params: PhilautiaParams, run: RunContext, *, evaluator: str, setting: str,
          images: Path, captions: Path, scores: Path, wave: str | None = None,
          previous: Path | None = None) -> None:
    """Score one generator's captions with one evaluator in one setting (a model job:
    `run` calls the evaluator); with `wave` (``philautia.waves.count`` > 1), the
    captions of that wave's images, or none once the `previous` look stopped the run."""
    from judgebias.io.artifacts import write_table
    from judgebias.studies.philautia.jobs import score_captions
    from judgebias.studies.philautia.tables import SCORES

    only = None
    if wave is not None:
        from judgebias.studies.philautia.waves import previous_stopped, wave_images

        if previous is not None and (stop := previous_stopped(previous)):
            log.info("score: wave %s asks nothing (%s)", wave, stop)
            write_table(SCORES.empty_table().to_pandas(), scores, SCORES)
            return
        only = wave_images(images, params.waves, int(wave))
    write_table(score_captions(run, evaluator, setting, str(images), str(captions),
                               spec=params.settings[setting], only=only), scores, SCORES)


def look(params: PhilautiaParams, *, wave: str, scores: Sequence[Path], images: Path,
         look: Path, previous: Path | None = None) -> None:
    """The look after one wave (philautia.waves): the judges' effects with repeated
    confidence intervals on the waves so far, and whether to stop."""
    from judgebias.io.artifacts import write_json
    from judgebias.studies.philautia.waves import look_after

    decided = look_after(analysis_scores(scores, params.score), params, int(wave), images,
                         previous)
    log.info("look %s: %s", wave, decided.reason)
    write_json(decided.as_record(), look)


def phi(params: PhilautiaParams, *, scores: Sequence[Path], long: Path,
        phi: Path, counts: Path) -> None:
    """Collect a setting's score tables into its long table, Phi and per-cell counts."""
    from judgebias.io.artifacts import write_frame

    long_table, phi_table, counts_table = collect_scores(scores, params.judges, params.score)
    write_frame(long_table, long)
    write_frame(phi_table, phi)
    write_frame(counts_table, counts)


def philautia(params: PhilautiaParams, *, scores: Path, metrics: Path,
              tables: Sequence[Path]) -> None:
    """Phi-tilde, philautia scores, tests and intervals of one setting; `tables` are the
    rule's outputs, one per name of ``tables.ANALYSIS_TABLES`` (by file stem)."""
    from judgebias.io.artifacts import by_stem, write_frame, write_json
    from judgebias.studies.philautia.tables import ANALYSIS_TABLES

    out = by_stem(tables, ANALYSIS_TABLES, "philautia tables")
    result = run_analysis(params, scores)
    computed = result.tables()
    for name in ANALYSIS_TABLES:
        write_frame(computed[name], out[name])
    write_json(result.metrics(), metrics)


def selfpref(params: PhilautiaParams, *, scores: Path, philautia: Path,
             selfpref: Path, look: Path | None = None) -> None:
    """Self- and family-preference in score points (beyond the paper), next to each
    model's philautia score; in waves, at the last `look`'s level (its intervals are the
    repeated confidence intervals of the look that stopped the run)."""
    import pandas as pd

    from judgebias.io.artifacts import write_table
    from judgebias.studies.philautia.selfpref import self_preference, with_philautia
    from judgebias.studies.philautia.tables import SELFPREF

    level = params.ci
    if look is not None:
        from judgebias.studies.philautia.waves import read_look

        level = read_look(look).level
    effects = self_preference(pd.read_parquet(scores), params.judges, params.families,
                              ci=level)
    write_table(with_philautia(effects, pd.read_parquet(philautia)), selfpref, SELFPREF)


def heatmaps(params: PhilautiaParams, *, setting: str, phi: Path, phi_tilde: Path,
             philautia: Path, figures: Sequence[Path]) -> None:
    """Fig. A (Phi) and Fig. 4 (Phi-tilde) of seed 000 and the philautia scores' figure;
    `figures` are the rule's outputs, one per name of ``tables.FIGURES``."""
    from judgebias.studies.philautia.figures import draw_figures
    from judgebias.studies.philautia.tables import FIGURES

    out = {path.stem: path for path in figures}
    if sorted(out) != sorted(FIGURES):
        raise ValueError(f"philautia figures {sorted(out)} are not {sorted(FIGURES)}")
    draw_figures(params.simulated, setting, phi, phi_tilde, philautia, out)


def analysis_scores(paths: Sequence[str | Path], score: str) -> pd.DataFrame:
    """The long (image, generator, evaluator, score in [0,1]) table the analysis reads;
    failed or unparseable answers are NaN (excluded from means, counted). `used_expected`
    says which rows used the log-prob expected score rather than the parsed one."""
    import pandas as pd

    from judgebias.io.artifacts import read_columns
    from judgebias.judging.values import numeric_values
    from judgebias.studies.philautia.tables import SCORES

    columns = ["image_id", "generator", "evaluator", "status", "value", "expected"]
    scores = pd.concat([read_columns(p, SCORES, columns) for p in paths], ignore_index=True)
    scores["score"] = numeric_values(scores, score, SCORE_SCALE)
    scores["used_expected"] = ((score == "expected") & scores["expected"].notna()
                               & scores["score"].notna())
    return scores[["image_id", "generator", "evaluator", "status", "score", "used_expected"]]


def collect_scores(score_paths: Sequence[str | Path], models: Sequence[str], score: str
                   ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The setting's scores as one long table, Phi (seed 000 §4.1) and per-cell counts,
    including how many valid scores used the expected score and how many fell back to
    the parsed one (no log-probs, or tokens that do not spell the answer); `score` as
    ``philautia.score``."""
    import pandas as pd

    from judgebias.studies.philautia.measures import phi_matrix, score_tensor

    models = list(models)
    long = analysis_scores(score_paths, score)
    _, tensor = score_tensor(long, models)
    result = phi_matrix(tensor)
    gen = pd.Index(models, name="generator")
    phi = pd.DataFrame(result.phi, index=gen, columns=models)
    valid = long[long["score"].notna()]
    used = valid.groupby(["generator", "evaluator"])["used_expected"].agg(["sum", "size"])
    counts = pd.DataFrame({
        "generator": [g for g in models for _ in models],
        "evaluator": [e for _ in models for e in models],
        "n_valid": result.n_valid.ravel(),
        "n_excluded": result.n_excluded.ravel(),
    })
    used = used.reindex(pd.MultiIndex.from_frame(counts[["generator", "evaluator"]]),
                        fill_value=0)
    counts["n_expected"] = used["sum"].to_numpy().astype(int)
    counts["n_parsed_fallback"] = (used["size"] - used["sum"]).to_numpy().astype(int)
    return long.drop(columns="used_expected"), phi.reset_index(), counts


def run_analysis(params: PhilautiaParams, scores_path: str | Path) -> PhilautiaResult:
    """Phi-tilde, philautia scores, the diagonal test, family sub-matrices, both
    leave-one-out readings and bootstrap intervals for one setting."""
    import pandas as pd

    from judgebias.studies.philautia.measures import analyse

    return analyse(pd.read_parquet(scores_path), params.judges, params.families,
                   ddof=params.ddof, n_boot=params.n_bootstrap,
                   n_permutations=params.n_permutations, seed=params.seed, ci=params.ci)
