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
from judgebias.studies.philautia.tables import SCORE_SCALE

POINTS = "G-VEval points (0-100)"
HUMAN = "human scale (0-1)"


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
