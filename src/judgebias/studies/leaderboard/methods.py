"""The judging methods of the leaderboard (helper of `measures`): each turns the judges'
scores of every (image, system) output into one score per output, the per-item matrix
the leaderboard's statistics resample.

* ``single``: one judge's score, in its points (G-VEval: 0-100).
* ``panel``: the mean of the panel judges' scores, in the same points, each judge's
  scores of its own system (``exclude: own``) or of its family's (``exclude: family``)
  left out (spec leaderboard.md, "Self-exclusion": philautia's finding, seed 000 §4.1,
  made operational). A system no remaining judge may score has no entry, never a zero.
  Decision: an output is the plain mean of the judges left for it, so two systems can be
  scored by different judges; a judge more lenient than the rest then moves the systems
  it scores. The report says which judges each system kept.
* ``pomms``: the ensemble the pomms study fitted (seed 000 §4.2: its members' scores in
  [0, 1] combined by the fitted Elastic Net), in the human scale it was fitted to; an
  output with a failed member score has no Pomms score (never imputed).

On an images task every method is pairwise: a judge compares each pair of systems'
images on a prompt, and a system's score on the prompt is its win rate over its
opponents (judgebias.stats.ranking.item_win_rates; spec leaderboard.md "Units").

* ``single``: the judge's verdict under one MMB instruction, p(A preferred) > 1/2 a win,
  < 1/2 a loss, = 1/2 a tie (half); both orders, where asked, count equally.
* ``mmb``: the judge's calibrated p(A preferred) from the MMB fit (seed 002 eq. 10: the
  fitted instructions' probabilities weighted by the pair's soft cluster of the fitted
  centroids, from the pair's image embeddings), averaged over the orders asked; the
  score is the mean calibrated probability of winning. A pair missing any fitted
  instruction's probability has none (never imputed).

A failed or unparseable judge answer is NaN (judgebias.judging.values.numeric_values):
it lowers an output's judge count, never its score.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from judgebias.judging.values import numeric_values
from judgebias.stats.ranking import item_win_rates
from judgebias.studies.philautia.tables import SCORE_SCALE

POINTS = "G-VEval points (0-100)"
HUMAN = "human scale (0-1)"
WIN_RATE = "win rate (ties half)"
CALIBRATED = "mean calibrated P(win)"


@dataclass(frozen=True)
class MethodScores:
    """One method's score of every output: ``matrix`` is images x systems (NaN: no
    score), ``unit`` its scale, ``judges`` per system the judges it kept."""

    matrix: pd.DataFrame
    unit: str
    judges: Mapping[str, tuple[str, ...]]


def judge_values(scores: pd.DataFrame, score: str) -> pd.DataFrame:
    """Every judge's score of every output on [0, 1] (``value``; NaN where the answer
    failed or could not be read), `score` as ``leaderboard.score``."""
    return scores[["image_id", "system", "judge"]].assign(
        value=numeric_values(scores, score, SCORE_SCALE).to_numpy())


def excluded(judge_families: Sequence[str], judge: str, system_model: str | None,
             system_families: Sequence[str], exclude: str) -> bool:
    """Whether `judge` may not score a system (`exclude`: none, own or family; a judge's
    own system is also its family's)."""
    own = system_model is not None and system_model == judge
    if exclude == "own":
        return own
    if exclude == "family":
        return own or bool(set(judge_families) & set(system_families))
    return False


def single(values: pd.DataFrame, images: Sequence[str], systems: Sequence[str],
           judge: str) -> MethodScores:
    """One judge's scores in its points."""
    wide = _wide(values[values["judge"] == judge], images, systems)
    return MethodScores(wide * SCORE_SCALE, POINTS, {s: (judge,) for s in systems})


def panel(values: pd.DataFrame, images: Sequence[str], systems: Sequence[str],
          judges: Sequence[str], may_score: Callable[[str, str], bool]) -> MethodScores:
    """The mean of `judges`' scores per output, a judge's scores of a system it may not
    score (``may_score(judge, system)`` false) left out."""
    kept = {s: tuple(j for j in judges if may_score(j, s)) for s in systems}
    keep = np.array([r.judge in kept[r.system] for r in values.itertuples()], dtype=bool)
    chosen = values[keep & values["judge"].isin(judges).to_numpy()]
    mean = chosen.groupby(["image_id", "system"], sort=False)["value"].mean()
    wide = mean.unstack("system").reindex(index=list(images), columns=list(systems))
    return MethodScores(wide * SCORE_SCALE, POINTS, kept)


def pomms(values: pd.DataFrame, images: Sequence[str], systems: Sequence[str],
          ensemble: Any) -> MethodScores:
    """The fitted Pomms ensemble's score of each output from its members' scores in
    [0, 1] (NaN where a member's answer failed)."""
    members = [str(m) for m in ensemble.members_]
    features = values[values["judge"].isin(members)].pivot(
        index=["image_id", "system"], columns="judge", values="value").reindex(
        columns=members)
    predicted = pd.Series(ensemble.predict(features), index=features.index)
    wide = predicted.unstack("system").reindex(index=list(images), columns=list(systems))
    return MethodScores(wide, HUMAN, {s: tuple(members) for s in systems})


def _wide(values: pd.DataFrame, images: Sequence[str], systems: Sequence[str]
          ) -> pd.DataFrame:
    return values.pivot(index="image_id", columns="system", values="value").reindex(
        index=list(images), columns=list(systems))


def pair_matrix(pairs: pd.DataFrame, value: str, prompts: Sequence[str],
                systems: Sequence[str]) -> pd.DataFrame:
    """Prompts x systems win rates from one value per (prompt, system_a, system_b) row
    (`value`: p(system_a preferred) or a verdict; NaN: not judged)."""
    index = {s: k for k, s in enumerate(systems)}
    row_of = {p: i for i, p in enumerate(prompts)}
    prefs = np.full((len(prompts), len(systems), len(systems)), np.nan)
    for item_id, a, b, v in zip(pairs["item_id"], pairs["system_a"], pairs["system_b"],
                                  pairs[value], strict=True):
        prefs[row_of[item_id], index[a], index[b]] = v
    return pd.DataFrame(item_win_rates(prefs), index=list(prompts), columns=list(systems))


def verdict(p: pd.Series) -> pd.Series:
    """1 where p(A preferred) > 1/2, 0 where below, 1/2 at a tie; NaN stays."""
    return pd.Series(np.where(p.isna(), np.nan, np.sign(p - 0.5) / 2 + 0.5), index=p.index)


def single_pairwise(verdicts: pd.DataFrame, prompts: Sequence[str], systems: Sequence[str],
                    judge: str, instruction: str) -> MethodScores:
    """One judge's verdicts under `instruction`, as win rates; a pair's verdict is the
    mean over the orders (and samples) asked."""
    chosen = verdicts[(verdicts["judge"] == judge) & (verdicts["instruction"] == instruction)]
    per_pair = chosen.assign(win=verdict(chosen["p_a"].astype(float))).groupby(
        ["item_id", "system_a", "system_b"], as_index=False)["win"].mean()
    return MethodScores(pair_matrix(per_pair, "win", prompts, systems), WIN_RATE,
                        {s: (judge,) for s in systems})


def calibrated_pairs(verdicts: pd.DataFrame, judge: str, estimator: Any,
                     embeddings: Mapping[str, np.ndarray], pairs: pd.DataFrame
                     ) -> pd.DataFrame:
    """Each pair's calibrated p(system_a preferred) from `judge`'s MMB fit (`estimator`,
    judgebias.studies.mmb.estimator): per order asked, the fitted instructions'
    probabilities and the two images' embeddings (`embeddings`, by image path) through
    eq. 10, then the mean over orders; NaN where any fitted instruction's probability is
    missing. `pairs` is jobs.system_pairs' table (the images of each pair)."""
    instructions = [str(i) for i in estimator.instructions_]
    chosen = verdicts[(verdicts["judge"] == judge)
                      & verdicts["instruction"].isin(instructions)]
    wide = chosen.pivot_table(index=["pair_id", "order"], columns="instruction",
                              values="p_a", aggfunc="mean").reindex(columns=instructions)
    complete = wide.notna().all(axis=1).to_numpy()
    wide = wide[complete]
    image = pairs.set_index("pair_id")[["image_a", "image_b"]].loc[
        wide.index.get_level_values("pair_id")]
    p = np.full(len(wide), np.nan)
    if len(wide):
        p = estimator.predict_proba(
            wide.to_numpy(dtype=float),
            embeddings_a=np.stack([embeddings[i] for i in image["image_a"]]),
            embeddings_b=np.stack([embeddings[i] for i in image["image_b"]]))[:, 1]
    per_order = pd.DataFrame({"pair_id": wide.index.get_level_values("pair_id"), "p": p})
    mean = per_order.groupby("pair_id")["p"].mean()
    return pairs[["pair_id", "item_id", "system_a", "system_b"]].assign(
        p=pairs["pair_id"].map(mean).astype(float))


def mmb(calibrated: pd.DataFrame, prompts: Sequence[str], systems: Sequence[str],
        judge: str) -> MethodScores:
    """The mean calibrated probability of winning (`calibrated_pairs`' p)."""
    return MethodScores(pair_matrix(calibrated, "p", prompts, systems), CALIBRATED,
                        {s: (judge,) for s in systems})


def method_scores(params: Any, task: str, method: str, values: pd.DataFrame,
                  images: Sequence[str], systems: Sequence[str],
                  ensemble: Any = None) -> MethodScores:
    """Method `method` of ``leaderboard.methods`` applied to `task`'s outputs (`params`: the
    study's view, params.LeaderboardParams)."""
    spec = params.methods[method]
    if spec.kind == "single":
        return single(values, images, systems, spec.judge)
    if spec.kind == "pomms":
        if ensemble is None:
            raise ValueError(f"method {method!r}: no fitted Pomms ensemble was given")
        return pomms(values, images, systems, ensemble)
    judges = list(spec.judges) if spec.judges else list(params.families)  # the panel
    task_systems = params.tasks[task].systems

    def may_score(judge: str, system: str) -> bool:
        return not excluded(params.families.get(judge, ()), judge,
                            task_systems[system].model,
                            params.system_families(task, system), spec.exclude)

    return panel(values, images, systems, judges, may_score)
