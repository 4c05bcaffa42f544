"""Benchmark: coverage of the score-unit self- and family-preference intervals, per setting.

    .venv/bin/python benchmarks/selfpref_coverage.py [--images 80] [--seeds 3] [--reps 200]

    .venv/bin/python benchmarks/selfpref_coverage.py --slopes between --no-interactions
        (the estimator before issue 40)
    .venv/bin/python benchmarks/selfpref_coverage.py --default-card [--images 300]

Why: `judgebias.studies.philautia.selfpref` gives each judge's own-caption and family
effect in score points with a 95% interval (image-clustered OLS, beyond seed 000). Issue
20 item 14 saw, on one planted 8-judge panel, 16 of 16 intervals cover in ``ref_based``
but 13 of 16 in ``ref_free``; issue 40 traced the misses to judges' preferences for
*other* models (selfpref's docstring, "Judge slopes"). This measures the coverage of
every effect's interval over many simulated data sets, in both settings, on planted
worlds the default does not use, per judge and pooled per effect kind (own, family, own
- family), the rate at which intervals exclude 0 where every truth is 0, and seed 000's
philautia score (Phi~'s diagonal, §4.1) beside the planted own effects.

Worlds (`WORLDS`; none is the default panel):

* ``eight_judges``: the issue's shape. 8 judges in 3 families: lumen (family preference
  +0.04 for its siblings; lumen-large also +0.04 for itself, lumen-mini +0.02,
  lumen-base none: a sibling-only judge), corvid (corvid-pro +0.05, corvid-flash no
  bias at all, corvid-lite -0.04: a negative self-preference), finch (finch-a +0.03,
  finch-b no bias at all).
* ``no_bias``: the same 8 judges without any preference: every truth is 0, so coverage
  is the rate at which the intervals cover zero.
* ``solo_and_cross``: the default's six models with the default's cross-model
  preferences (+-0.01), lumen's family preference +0.03 (lumen-large and lumen-base;
  lumen-base also +0.01 for itself), corvid-pro +0.05 and corvid-lite -0.02 for itself,
  lumen-mini no bias at all, corvid-lite in a family of its own (no sibling: its family
  effect is not estimable). Cross-model preferences are not in the estimator's model;
  they leak into own/family through the judge's evaluator effect and slope (measured:
  corvid-lite's own effect, selfpref's docstring).
* ``cross_eight`` (issue 40): eight_judges' shape with lumen's family preference +0.03,
  own effects +0.04, 0, +0.02 (lumen), +0.05, none at all, -0.03 (corvid), +0.01, none at
  all (finch), and `CROSS`: one to three preferences for or against other models
  (+-0.01 to 0.02) for six of the eight judges (corvid-flash and finch-b: no preference
  of any kind), one of them for a sibling; lumen-large's leniency 0.62 and finch-a's
  0.65 put them near the top clip (`CROSS_SIM`); tokenizers mixed (whole numbers;
  digits for lumen-base, corvid-flash, finch-a).
* ``cross_only``: the same judges and `CROSS`, no self- or family preference: every own
  truth is 0 (the issue's check: no own effect significant beyond the nominal rate).
* ``cross_random``: cross_eight's judges, traits and own/family preferences, with the
  preferences for other models drawn anew for each seed (`random_relations`: 0 to 3 per
  judge, +-1 or 2 points, siblings included). A fixed world is one pattern of relations;
  the interaction variance is a random-effects model, whose coverage is an average over
  patterns, and this world measures that average.

Where the scores come from. Each world's panel is built in ``params.yaml`` form and
validated; per seed, the synthetic images are built (`build_synthetic_dataset`), every
generator captions them through the pipeline's requests (`build_requests` with the
philautia caption task) and the sim backend (`build_backend`), and every evaluator's
systematic judgement ``m`` of every caption is what the sim computes for the pipeline's
G-VEval request of that setting (`SimBackend.evaluation` on the request's image, caption
and references: accuracy, style bonus, clip). The answer noise is then drawn with numpy,
as the sim draws it: the opinion ``m' = clip(m + noise z, 0, 1)`` with ``z ~ N(0, 1)``
per request (the sim seeds z by the request's hash: independent across requests), the
answer's score n drawn from ``p = exp(score_logprobs(m', noise))`` (temperature 1), and
the score the analysis reads is what the pipeline's parser makes of that answer with its
top-10 log-probs (`SampledScorer`: `IntegerScore.parse` through benchmarks/
expected_score_bias.py's `estimates`, tabulated over opinions). That is discrete noise:
the estimate depends on the sampled n, most for the digit-by-digit tokenizer (lumen-base,
corvid-flash, finch-a in the worlds that use the default's or `CROSS_SIM`'s traits).
``--answers expected`` instead reads the expected score ``sum_n n p(n | m')`` exactly,
which the parser estimates without bias (benchmarks/expected_score_bias.py).

Truth in points (what the tests call the planted effect): the mean over the judge's own
captions (family: its siblings' captions) of the expected score with the planted
preferences minus the expected score of the same request with the judge's self- and
own-family preferences set to 0 (cross-model preferences kept), both averaged over z by
Gauss-Hermite quadrature. A planted bonus b is about 100 b points, less where the clip
binds.

Family truth: what the judge adds to its siblings' captions, a preference for one
sibling included (the estimand, selfpref's docstring), so the counterfactual also
removes the judge's preferences for its siblings; preferences for models outside its
families stay.

Columns: ``truth`` (points), ``bias`` (mean estimate - truth), ``coverage`` of the 95%
interval over seeds x reps data sets, ``MC se`` = sqrt(0.95 * 0.05 / n), ``ok`` when
|coverage - 0.95| <= 3 MC se; per effect kind the pooled coverage with its band, the
lowest judge, and ``rejects 0`` (share of intervals excluding 0 where every truth of
the kind is 0). The philautia check gives Spearman's rank correlation of the noise-
averaged philautia score with the planted own effects and flags a judge whose score has
the wrong sign for a planted |own| > 0.5 point, or |score| >= 1 sd for an own effect
within 0.5 point of 0 (a description, not a test). ``--default-card`` instead runs the
default panel through the pipeline's caption and score jobs and prints its table before
and after issue 40, read as the card reads it. Prints Markdown.

Results (issue 40; 300 images, 4 seeds x 100 draws per world and setting, answers
sampled and parsed; 1410 s for all six worlds on a shared 2-core machine; pooled
coverage of the 95% intervals, band 0.95 +- 3 MC se = 0.938-0.962 for 3200 intervals,
0.935-0.965 for 2000; the lowest judge in brackets)::

    after issue 40 (default: slopes within generators, interaction variance)
    world           setting    own              family           own - family     own rejects 0
    eight_judges    ref_based  0.955 [0.935]    0.961 [0.938]    0.951 [0.943]
    eight_judges    ref_free   0.953 [0.927]    0.952 [0.932]    0.953 [0.935]
    no_bias         ref_based  0.959 [0.953]    0.956 [0.930]    0.954 [0.930]    0.041
    no_bias         ref_free   0.953 [0.938]    0.961 [0.945]    0.961 [0.950]    0.047
    solo_and_cross  ref_based  0.962 [0.953]    0.963 [0.915]    0.956 [0.938]
    solo_and_cross  ref_free   0.959 [0.950]    0.955 [0.910]    0.959 [0.925]
    cross_eight     ref_based  0.960 [0.938]    0.954 [0.858]    0.956 [0.940]
    cross_eight     ref_free   0.955 [0.922]    0.952 [0.860]    0.944 [0.895]
    cross_only      ref_based  0.955 [0.927]    0.951 [0.845]    0.955 [0.943]    0.045
    cross_only      ref_free   0.963* [0.943]   0.946 [0.860]    0.949 [0.900]    0.037
    cross_random    ref_based  0.946 [0.905]    0.952 [0.902]    0.946 [0.932]
    cross_random    ref_free   0.947 [0.915]    0.948 [0.905]    0.941 [0.922]

    cross_only again with other noise draws (--seed 1)
    cross_only      ref_based  0.955 [0.925]    0.950 [0.868]    0.949 [0.925]    0.045
    cross_only      ref_free   0.955 [0.932]    0.955 [0.870]    0.949 [0.925]    0.045

    --answers expected (the expected score exactly: less answer noise)
    solo_and_cross  ref_based  0.965* [0.945]   0.960 [0.885]    0.963 [0.925]
    solo_and_cross  ref_free   0.959 [0.943]    0.947 [0.873]    0.962 [0.940]
    cross_eight     ref_based  0.962 [0.907]    0.951 [0.810]    0.952 [0.925]
    cross_eight     ref_free   0.969* [0.932]   0.954 [0.838]    0.957 [0.922]

    before issue 40 (--slopes between --no-interactions; 2 seeds, expected answers)
    world           setting    own              family           own - family     own rejects 0
    cross_eight     ref_based  0.876* [0.645]   0.841* [0.355]   0.848* [0.475]
    cross_eight     ref_free   0.879* [0.695]   0.842* [0.405]   0.853* [0.460]
    cross_only      ref_based  0.873* [0.735]   0.839* [0.400]   0.850* [0.520]   0.128
    cross_only      ref_free   0.880* [0.790]   0.839* [0.420]   0.857* [0.505]   0.120
    solo_and_cross  ref_based  0.893* [0.725]   0.905* [0.835]   0.930 [0.905]
    solo_and_cross  ref_free   0.902* [0.730]   0.916* [0.870]   0.932 [0.920]

    the first issue-40 estimator (its tau^2 subtracted each cell's row spread / count;
    2 seeds, expected answers): every cell in band but solo_and_cross family ref_free,
    0.919* [0.795] (4 seeds: 0.928)

``*``: outside the band. With sampled answers one cell of 36 is outside, on the
conservative side (cross_only own, ref_free, 0.963 against 0.962; 0.955 with other
noise draws). With the expected score exactly, own intervals over-cover by up to 0.019
in the worlds with relations (the truncation of tau^2 at 0 and its noise, which the
answers' noise dilutes): conservative, not anti-conservative. The first issue-40
estimator's one miss (solo_and_cross family, lumen-base 0.80-0.86) came from a tau^2
biased low by about 0.17 points^2 (interactions.py's docstring); with the exact noise
term the pooled cell is in band, though lumen-base's family interval still covers
0.91-0.92 (its relations push one way: selfpref's docstring, "Preferences for other
models"). Per judge, the lowest coverage is a family effect in cross_eight / cross_only
(lumen-base, 0.85-0.87): a random-effects interval holds on average over judges and
patterns of relations (cross_random: every kind 0.941-0.952), not for each judge of one
fixed pattern. ``rejects 0`` in cross_only (0.037-0.045; 0.120-0.128 before) is the
issue's check: preferences for other models and none for self, no own effect significant
beyond the nominal rate. The default panel's table before and after (``--default-card``,
300 images, 22 s): every own - family reading keeps its direction and significance
(corvid-pro + in both settings, the five others not different from 0); own and family
apart are not identified in the two-family default.

Philautia score against the planted own effects (noise-averaged Phi, 300 images, both
settings alike): Spearman +0.85 to +0.95 over the 4 seeds (eight_judges), +0.88
(cross_eight), +0.58 (solo_and_cross), +0.78 to +0.90 (cross_random). It ranks the
planted self-preferences where they dominate, and misleads where they do not: in no_bias
(no preference of any kind) scores reach -1.58 (finch-a) and +1.44 (corvid-flash) sd,
because the double standardisation scales whatever judge x generator structure is left
(here judges' different slopes on generators of different quality) to unit variance; in
cross_only lumen-base, whose only relation is +2 points for corvid-flash, scores -2.1 to
-2.5 sd (read: a judge that disfavours itself), and corvid-lite +1.1; in solo_and_cross
lumen-base (+0.9 points for itself) scores -0.26; in cross_random's second seed lumen-
mini (+1.9 points for itself) scores -0.15 and corvid-flash (none) -1.93.
"""

from __future__ import annotations

import argparse
import copy
import itertools
import os
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # small matrices: BLAS threads only contend (set before numpy)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
import pandas as pd
import yaml
from expected_score_bias import estimates  # benchmarks/: the pipeline's parser on sim answers
from scipy import stats

from judgebias.config import validate_params
from judgebias.io.artifacts import write_table
from judgebias.judging.tasks import build_requests
from judgebias.models.context import RunContext
from judgebias.models.registry import build_backend
from judgebias.models.sim import score_logprobs
from judgebias.studies.philautia.data import build_synthetic_dataset
from judgebias.studies.philautia.jobs import (
    caption_images,
    caption_task,
    judge_task,
    score_captions,
)
from judgebias.studies.philautia.measures import phi_tilde, philautia_scores
from judgebias.studies.philautia.params import PhilautiaParams, Setting, model_families
from judgebias.studies.philautia.selfpref import SLOPES, self_preference, siblings
from judgebias.studies.philautia.sim import (
    evaluation,
    latent_mean,
    parse_evaluation_prompt,
    style_bonus,
)
from judgebias.studies.philautia.steps import analysis_scores
from judgebias.studies.philautia.tables import CAPTIONS, IMAGES, SCORES
from judgebias.study import study_models

REPO = Path(__file__).resolve().parents[1]
SETTINGS = ("ref_based", "ref_free")
LUMEN = ["lumen-large", "lumen-base", "lumen-mini"]
CORVID = ["corvid-pro", "corvid-flash", "corvid-lite"]
FINCH = {"finch-a": ("boldly", 0.85, 0.5), "finch-b": ("calmly", 0.7, 0.55)}
# Issue 40's shape: a few preferences for or against *other* models per judge (+-0.01 to
# 0.02, i.e. 1-2 points), two judges with no preference at all (corvid-flash, finch-b).
# corvid-lite (the worst captions) likes lumen-large (the best): the case where a
# judge-specific slope fitted on the generators' means is tilted most.
CROSS = {"lumen-large": {"corvid-lite": 0.01, "finch-a": -0.02},
         "lumen-base": {"corvid-flash": 0.02},
         "lumen-mini": {"corvid-pro": -0.01, "finch-a": 0.01},
         "corvid-pro": {"lumen-large": 0.02, "finch-b": -0.01},
         "corvid-lite": {"lumen-large": 0.02, "corvid-flash": -0.01, "finch-a": 0.01},
         "finch-a": {"corvid-pro": -0.02, "lumen-mini": 0.01}}
# leniency near the top clip (m up to 0.62 + 0.25 + 0.07) and mixed tokenizers
CROSS_SIM = {"lumen-large": {"leniency": 0.62}, "finch-a": {"leniency": 0.65,
                                                            "tokenizer": "digits"}}
# world -> ({model: (self_preference, family preferences[, preferences for other
#            models[, other sim traits]])}, keep the default's cross-model preferences,
#           models moved to a family of their own)
WORLDS: dict[str, tuple[dict[str, tuple[Any, ...]], bool, list[str]]] = {
    "eight_judges": ({"lumen-large": (0.04, {"lumen": 0.04}),
                      "lumen-base": (0.0, {"lumen": 0.04}),
                      "lumen-mini": (0.02, {"lumen": 0.04}),
                      "corvid-pro": (0.05, {}), "corvid-flash": (0.0, {}),
                      "corvid-lite": (-0.04, {}), "finch-a": (0.03, {}),
                      "finch-b": (0.0, {})}, False, []),
    "no_bias": ({m: (0.0, {}) for m in [*LUMEN, *CORVID, *FINCH]}, False, []),
    "solo_and_cross": ({"lumen-large": (0.0, {"lumen": 0.03}),
                        "lumen-base": (0.01, {"lumen": 0.03}),
                        "lumen-mini": (0.0, {}), "corvid-pro": (0.05, {}),
                        "corvid-flash": (0.0, {}), "corvid-lite": (-0.02, {})},
                       True, ["corvid-lite"]),
    "cross_eight": ({"lumen-large": (0.04, {"lumen": 0.03}),
                     "lumen-base": (0.0, {"lumen": 0.03}),
                     "lumen-mini": (0.02, {"lumen": 0.03}),
                     "corvid-pro": (0.05, {}), "corvid-flash": (0.0, {}),
                     "corvid-lite": (-0.03, {}), "finch-a": (0.01, {}),
                     "finch-b": (0.0, {})}, False, []),
    # preferences for other models only: every own and family truth is 0
    "cross_only": ({m: (0.0, {}) for m in [*LUMEN, *CORVID, *FINCH]}, False, []),
}
for _world in ("cross_eight", "cross_only"):
    WORLDS[_world] = ({m: (*plant[:2], CROSS.get(m, {}), CROSS_SIM.get(m, {}))
                       for m, plant in WORLDS[_world][0].items()}, *WORLDS[_world][1:])
# cross_eight's own and family preferences, with each seed's own draw of the preferences
# for other models (`random_relations`): coverage over many patterns of relations, the
# average a random-effects interval promises, where a fixed world shows one pattern
WORLDS["cross_random"] = WORLDS["cross_eight"]
RANDOM_RELATIONS = {"cross_random"}


def random_relations(models: Sequence[str], seed: int) -> dict[str, dict[str, float]]:
    """Per judge, 0 to 3 preferences for or against other models (any but itself, a
    sibling included), each +-0.01 or +-0.02 (1-2 points), drawn from the seed."""
    rng = np.random.default_rng(10_000 + seed)
    out = {}
    for model in models:
        others = [m for m in models if m != model]
        chosen = rng.choice(others, size=rng.integers(0, 4), replace=False)
        out[model] = {str(m): float(rng.choice([-0.02, -0.01, 0.01, 0.02])) for m in chosen}
    return out
SOLO_OPENERS = ("Pictured here is", "Visible here is")
KINDS = ("own", "family", "own_vs_family")
GRID = np.linspace(0.0, 1.0, 4001)  # opinions at which the expected score is tabulated
NODES, WEIGHTS = np.polynomial.hermite_e.hermegauss(61)
WEIGHTS = WEIGHTS / WEIGHTS.sum()


def world_params(name: str, seed: int) -> dict[str, Any]:
    """The default params.yaml with the world's panel (validated), backend seed `seed`."""
    prefs, keep_cross, alone = WORLDS[name]
    if name in RANDOM_RELATIONS:
        drawn = random_relations(list(prefs), seed)
        prefs = {m: (*plant[:2], drawn[m], *plant[3:]) for m, plant in prefs.items()}
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["seed"] = seed
    params["families"]["finch"] = {"description": "benchmark", "sim": {"opener": "Here we see"}}
    for key, (signature, quality, leniency) in FINCH.items():
        model = copy.deepcopy(params["panel"]["corvid-flash"])
        model.update(model_id=f"sim/{key}", family="finch")
        model["sim"] = {"caption_quality": quality, "signature": signature,
                        "leniency": leniency, "spread": 0.5, "noise": 0.08,
                        "tokenizer": "whole", "self_preference": 0.0}
        params["panel"][key] = model
    for model, (self_p, family, *more) in prefs.items():
        sim = params["panel"][model]["sim"]
        cross = (sim.get("preferences") or {}).get("models", {}) if keep_cross else {}
        cross = {**cross, **(more[0] if more else {})}
        sim.update(self_preference=self_p,
                   preferences={"models": dict(cross), "families": dict(family)})
        sim.update(more[1] if len(more) > 1 else {})
    for i, model in enumerate(alone):
        params["families"][f"solo{i}"] = {"description": "benchmark",
                                          "sim": {"opener": SOLO_OPENERS[i]}}
        params["panel"][model]["family"] = f"solo{i}"
    params["philautia"]["models"] = list(prefs)
    return validate_params(params)


def without_own_preferences(params: Mapping[str, Any], models: Sequence[str]
                            ) -> dict[str, Any]:
    """The same world with each judge's self-preference, its preference for its own
    families and its preferences for its siblings at 0 (preferences for models outside
    its families kept): the truth's counterfactual. A preference for one sibling is
    part of the family effect (what the judge adds to its siblings' captions on
    average, whatever the reason), never of the own effect."""
    null = copy.deepcopy(dict(params))
    families = model_families(params, models)
    sib = siblings(models, families)
    for i, model in enumerate(models):
        own = families[model]
        own = {own} if isinstance(own, str) else set(own)
        sim = null["panel"][model]["sim"]
        prefs = dict(sim.get("preferences") or {})
        prefs["families"] = {f: b for f, b in (prefs.get("families") or {}).items()
                             if f not in own}
        kin = {models[j] for j in np.flatnonzero(sib[i])}
        prefs["models"] = {k: b for k, b in (prefs.get("models") or {}).items()
                           if k not in kin}
        sim.update(self_preference=0.0, preferences=prefs)
    return null


@dataclass(frozen=True)
class World:
    """One seed of a world: the sim's systematic judgement of every caption in both
    settings, with and without the planted preferences ([setting][e, g, k], 0-1)."""

    models: list[str]
    families: Mapping[str, Any]
    image_ids: np.ndarray
    noise: np.ndarray  # per evaluator
    tokenizers: list[str]  # per evaluator: how its score is spelled (sim `tokenizer`)
    planted: Mapping[str, np.ndarray]
    null: Mapping[str, np.ndarray]


def captions_of(run: RunContext, generator: str, images: pd.DataFrame, prompt: str
                ) -> list[str]:
    """The generator's caption of every image: the pipeline's caption requests (template
    `prompt`, ``philautia.caption_prompt``), answered by the sim backend."""
    requests, _ = build_requests(run, generator, caption_task(prompt), images)
    backend, _ = build_backend(run, generator, "generator")
    answers = [backend.answer(r) for r in requests]
    failed = [a.error for a in answers if a.status != "ok"]
    if failed:
        raise RuntimeError(f"{generator}: caption failed: {failed[0]}")
    return [a.text for a in answers]


def judgements(run: RunContext, null: RunContext, evaluator: str, setting: Setting,
               rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The evaluator's systematic judgement m of each row's caption for the setting's
    G-VEval request, as the sim computes it (philautia.sim `evaluation`), and the same with
    its own preferences removed (the sim's `style_bonus` of the null world, `null`)."""
    requests, _ = build_requests(run, evaluator, judge_task(setting), rows)
    backend, _ = build_backend(run, evaluator, "evaluator")
    backend0, _ = build_backend(null, evaluator, "evaluator")
    model = backend.models[run.model(evaluator).model_id]
    model0 = backend0.models[null.model(evaluator).model_id]
    planted, removed = [], []
    for request in requests:
        caption, references = parse_evaluation_prompt(request.prompt)
        result = evaluation(backend, model, backend.perceive(request), caption, references)
        planted.append(result.mean)
        removed.append(latent_mean(model0, result.accuracy,
                                   style_bonus(backend0, model0, caption)))
    return np.array(planted), np.array(removed)


def build_world(name: str, seed: int, n_images: int, workdir: Path) -> World:
    """Images, captions and judgements of one seed of a world (both settings)."""
    params = world_params(name, seed)
    params["journal_dir"] = str(workdir / "journal")  # the sim's perception store
    models = list(params["philautia"]["models"])
    view = PhilautiaParams.from_params(params)
    run, null = RunContext(params), RunContext(without_own_preferences(params, models))
    images = build_synthetic_dataset(workdir / f"{name}-{seed}", n_images, seed, 128, 5)
    images["status"] = "ok"
    planted = {s: np.zeros((len(models), len(models), n_images)) for s in SETTINGS}
    removed = {s: np.zeros_like(planted[s]) for s in SETTINGS}
    for j, generator in enumerate(models):
        rows = images.assign(generator=generator,
                             caption=captions_of(run, generator, images,
                                                 view.caption_prompt))
        for i, evaluator in enumerate(models):
            for setting in SETTINGS:
                planted[setting][i, j], removed[setting][i, j] = judgements(
                    run, null, evaluator, view.settings[setting], rows)
    noise = np.array([params["panel"][m]["sim"]["noise"] for m in models], dtype=float)
    tokenizers = [params["panel"][m]["sim"]["tokenizer"] for m in models]
    return World(models, model_families(params, models),
                 images["image_id"].to_numpy(), noise, tokenizers, planted, removed)


def expected_score_curve(noise: float) -> np.ndarray:
    """sum_n n p(n | opinion) on GRID: the expected score (points) the sim's log-probs give."""
    scores = np.arange(101)
    return np.array([np.exp(score_logprobs(float(o), noise)) @ scores for o in GRID])


class Scorer:
    """Expected scores (points) from systematic judgements and opinion noise z."""

    def __init__(self, noise: np.ndarray) -> None:
        self.noise = noise
        self.curves = {float(n): expected_score_curve(float(n)) for n in set(noise)}

    def __call__(self, means: np.ndarray, z: np.ndarray) -> np.ndarray:
        """means[e, g, k], z broadcastable to it: the expected score of each answer."""
        out = np.empty(np.broadcast_shapes(means.shape, z.shape))
        for e, noise in enumerate(self.noise):
            opinion = np.clip(means[e] + noise * z[..., e, :, :], 0.0, 1.0)
            out[..., e, :, :] = np.interp(opinion, GRID, self.curves[float(noise)])
        return out

    def mean(self, means: np.ndarray) -> np.ndarray:
        """The expected score averaged over z (Gauss-Hermite quadrature)."""
        return sum(w * self(means, np.full(means.shape, z))
                   for z, w in zip(NODES, WEIGHTS, strict=True))

    def draw(self, means: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One data set: every answer's expected score at a fresh opinion draw."""
        return self(means, rng.standard_normal(means.shape))


ANSWER_GRID = np.linspace(0.0, 1.0, 401)  # opinions at which parsed answers are tabulated


def answer_table(noise: float, tokenizer: str) -> tuple[np.ndarray, np.ndarray]:
    """At each opinion of ANSWER_GRID: the parser's estimate for every sampled score n
    (the pipeline's `IntegerScore.parse` of an answer spelling n with the sim's top-10
    log-probs, benchmarks/expected_score_bias.py `estimates`) and the CDF of n."""
    estimate, cdf = np.empty((len(ANSWER_GRID), 101)), np.empty((len(ANSWER_GRID), 101))
    for i, opinion in enumerate(ANSWER_GRID):
        logp = score_logprobs(float(opinion), noise)
        estimate[i] = estimates(logp, tokenizer)[0]
        cdf[i] = np.cumsum(np.exp(logp))
    return estimate, cdf


class SampledScorer(Scorer):
    """As `Scorer`, but a data set's scores are what the pipeline reads from one sampled
    answer per request: the score n drawn from p(n | opinion) (temperature 1, as the sim
    answers) and parsed with its top-10 log-probs, so the parser's residual (discrete:
    it depends on the sampled n, most for the digit-by-digit tokenizer) is in the data.
    Truths stay the expected scores (`Scorer.mean`), which the parser estimates without
    bias (benchmarks/expected_score_bias.py)."""

    def __init__(self, noise: np.ndarray, tokenizers: Sequence[str]) -> None:
        super().__init__(noise)
        self.tokenizers = list(tokenizers)
        self.tables = {(float(n), t): answer_table(float(n), t)
                       for n, t in set(zip(noise, tokenizers, strict=True))}

    def draw(self, means: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        out = np.empty(means.shape)
        step = len(ANSWER_GRID) - 1
        for e, (noise, tokenizer) in enumerate(zip(self.noise, self.tokenizers, strict=True)):
            estimate, cdf = self.tables[(float(noise), tokenizer)]
            opinion = np.clip(means[e] + noise * rng.standard_normal(means[e].shape), 0, 1)
            low = np.minimum(np.floor(opinion * step).astype(int), step - 1)
            weight = opinion * step - low
            nearest = np.where(weight < 0.5, low, low + 1)
            u = rng.random(opinion.shape)[..., None] * cdf[nearest, -1:]
            score = np.minimum((cdf[nearest] < u).sum(axis=-1), 100)
            out[e] = (1 - weight) * estimate[low, score] + weight * estimate[low + 1, score]
        return out


def truth(world: World, scorer: Scorer, setting: str) -> pd.DataFrame:
    """Per judge: own and family effect in points (module docstring)."""
    diff = scorer.mean(world.planted[setting]) - scorer.mean(world.null[setting])
    sib = siblings(world.models, world.families)
    return pd.DataFrame({
        "own": [diff[i, i].mean() for i in range(len(world.models))],
        "family": [diff[i][sib[i]].mean() if sib[i].any() else np.nan
                   for i in range(len(world.models))]}, index=world.models)


def long_table(world: World, scores: np.ndarray) -> pd.DataFrame:
    """scores[e, g, k] (points) as the pipeline's long [0, 1] table."""
    m, _, n = scores.shape
    e, g, k = np.meshgrid(np.arange(m), np.arange(m), np.arange(n), indexing="ij")
    names = np.asarray(world.models)
    return pd.DataFrame({"image_id": world.image_ids[k.ravel()], "generator": names[g.ravel()],
                         "evaluator": names[e.ravel()], "score": scores.ravel() / 100.0})


def replicate(world: World, scorer: Scorer, setting: str, reps: int,
              rng: np.random.Generator, slopes: bool | str = True,
              interactions: bool = True) -> pd.DataFrame:
    """`reps` data sets of one seed and setting: each effect's estimate, interval and
    whether it covers the truth."""
    target = truth(world, scorer, setting)
    target["own_vs_family"] = target["own"] - target["family"]
    means = world.planted[setting]
    rows = []
    for rep in range(reps):
        scores = scorer.draw(means, rng)
        fit = self_preference(long_table(world, scores), world.models, world.families,
                              slopes=slopes, interactions=interactions)
        for kind in KINDS:
            true = target[kind].to_numpy()
            low, high = fit[f"{kind}_ci_low"].to_numpy(), fit[f"{kind}_ci_high"].to_numpy()
            rows.append(pd.DataFrame({
                "rep": rep, "model": world.models, "effect": kind, "truth": true,
                "estimate": fit[f"{kind}_effect"].to_numpy(),
                "covered": (low <= true) & (true <= high),
                "rejects": (low > 0) | (high < 0)}).dropna(subset=["truth"]))
    return pd.concat(rows, ignore_index=True)


def philautia_check(world: World, scorer: Scorer, setting: str) -> dict[str, Any]:
    """Seed 000's philautia score (Phi~'s diagonal, §4.1; `measures.phi_tilde` on the
    noise-averaged Phi) beside the planted own effects: Spearman's rank correlation
    (scipy.stats.spearmanr) and the judges it misplaces in sign (a positive score for a
    judge with no or a negative self-preference, or the reverse)."""
    target = truth(world, scorer, setting)["own"]
    mean = scorer.mean(world.planted[setting])  # [e, g, k] points
    phi = mean.mean(axis=2).T / 100.0  # Phi[g, e]
    score = pd.Series(philautia_scores(phi_tilde(phi)), index=world.models)
    rho = stats.spearmanr(score, target).statistic if target.nunique() > 1 else np.nan
    wrong = [m for m in world.models if (target[m] > 0.5 and score[m] <= 0)
             or (target[m] < -0.5 and score[m] >= 0) or (abs(target[m]) <= 0.5
                                                         and abs(score[m]) >= 1.0)]
    return {"spearman": rho, "misread": ", ".join(
        f"{m} ({target[m]:+.1f} pts, score {score[m]:+.2f})" for m in wrong)}


def summarise(results: pd.DataFrame) -> pd.DataFrame:
    """Coverage per world, setting, judge and effect, with its Monte-Carlo error."""
    keys = ["world", "setting", "model", "effect"]
    out = results.groupby(keys, sort=False).agg(
        truth=("truth", "mean"), estimate=("estimate", "mean"),
        coverage=("covered", "mean"), rejects=("rejects", "mean"),
        n=("covered", "size")).reset_index()
    out["bias"] = out["estimate"] - out["truth"]
    out["mc_se"] = np.sqrt(0.95 * 0.05 / out["n"])
    out["ok"] = (out["coverage"] - 0.95).abs() <= 3 * out["mc_se"]
    return out


def markdown(summary: pd.DataFrame, checks: pd.DataFrame | None = None) -> str:
    lines = ["| world | setting | judge | effect | truth (pts) | bias (pts) | coverage | "
             "MC se | ok |", "|---|---|---|---|---:|---:|---:|---:|---|"]
    for row in summary.itertuples():
        lines.append(f"| {row.world} | {row.setting} | {row.model} | {row.effect} | "
                     f"{row.truth:.2f} | {row.bias:+.2f} | {row.coverage:.3f} | "
                     f"{row.mc_se:.3f} | {'yes' if row.ok else 'NO'} |")
    pooled = summary.groupby(["world", "setting", "effect"], sort=False).apply(
        lambda s: pd.Series({
            "coverage": np.average(s["coverage"], weights=s["n"]), "n": s["n"].sum(),
            "ok": s["ok"].sum(), "k": len(s), "zero": (s["truth"].abs() < 1e-9).sum(),
            "rejects": (np.average(s["rejects"], weights=s["n"])
                        if (s["truth"].abs() < 1e-9).all() else np.nan),
            "worst": s["coverage"].min()}), include_groups=False).reset_index()
    pooled["mc_se"] = np.sqrt(0.95 * 0.05 / pooled["n"])
    pooled["in_band"] = (pooled["coverage"] - 0.95).abs() <= 3 * pooled["mc_se"]
    lines += ["", "Per effect kind (pooled over judges; band: 0.95 +- 3 MC se; rejects: "
              "share of intervals excluding 0 where every truth is 0):", "",
              "| world | setting | effect | pooled coverage | MC band | in band | "
              "intervals | lowest judge | judges within 3 MC se | rejects 0 |",
              "|---|---|---|---:|---|---|---:|---:|---:|---:|"]
    for row in pooled.itertuples():
        band = f"{0.95 - 3 * row.mc_se:.3f}-{0.95 + 3 * row.mc_se:.3f}"
        rejects = "" if np.isnan(row.rejects) else f"{row.rejects:.3f}"
        lines.append(f"| {row.world} | {row.setting} | {row.effect} | {row.coverage:.3f} | "
                     f"{band} | {'yes' if row.in_band else 'NO'} | {int(row.n)} | "
                     f"{row.worst:.3f} | {int(row.ok)} of {int(row.k)} | {rejects} |")
    if checks is not None and len(checks):
        lines += ["", "Philautia score (seed 000 §4.1, noise-averaged Phi) against the "
                  "planted own effects:", "",
                  "| world | setting | seed | Spearman | misread (own truth, score) |",
                  "|---|---|---:|---:|---|"]
        for row in checks.itertuples():
            lines.append(f"| {row.world} | {row.setting} | {row.seed} | "
                         f"{row.spearman:+.2f} | {row.misread} |")
    return "\n".join(lines)


ESTIMATORS = {"before": {"slopes": "between", "interactions": False},
              "after": {"slopes": "within", "interactions": True}}


def reading(row: pd.Series, kind: str) -> str:
    """The card's reading of one effect: '+', '-' (interval excludes 0) or '0'."""
    if pd.isna(row[f"{kind}_effect"]):
        return "n/a"
    if row[f"{kind}_ci_low"] > 0:
        return "+"
    return "-" if row[f"{kind}_ci_high"] < 0 else "0"


def default_card(n_images: int) -> str:
    """The default panel's effects before and after issue 40, read as the card reads
    them (module docstring, "--default-card")."""
    started = time.perf_counter()
    params = validate_params(yaml.safe_load((REPO / "params.yaml").read_text()))
    view = PhilautiaParams.from_params(params)
    synthetic = params["philautia"]["dataset"]["synthetic"]
    models = study_models(params, "philautia")
    families = model_families(params, models)
    lines = ["| setting | judge | effect | before | after | same reading |",
             "|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        params["journal_dir"] = str(root / "journal")
        run = RunContext(params)
        images = build_synthetic_dataset(root / "dataset", n_images, synthetic["seed"],
                                         synthetic["image_size"],
                                         synthetic["n_references"])
        images_path = str(root / "images.parquet")
        write_table(images, images_path, IMAGES)
        captions = {}
        for g in models:
            captions[g] = str(root / f"captions-{g}.parquet")
            write_table(caption_images(run, g, images_path, prompt=view.caption_prompt),
                        captions[g], CAPTIONS)
        for setting, spec in view.settings.items():
            paths = []
            for e, g in itertools.product(models, models):
                path = root / f"{setting}-{e}-{g}.parquet"
                write_table(score_captions(run, e, setting, images_path, captions[g],
                                           spec=spec), path, SCORES)
                paths.append(str(path))
            long = analysis_scores(paths, "expected")
            fits = {name: self_preference(long, models, families, **kw).set_index("model")
                    for name, kw in ESTIMATORS.items()}
            for model in models:
                for kind in ("own", "family", "own_vs_family"):
                    cells = []
                    for fit in fits.values():
                        row = fit.loc[model]
                        identified = kind == "own_vs_family" or row[f"{kind}_identified"]
                        cells.append("not identified" if not identified or pd.isna(
                            row[f"{kind}_effect"]) else
                            f"{row[f'{kind}_effect']:+.2f} [{row[f'{kind}_ci_low']:+.2f}, "
                            f"{row[f'{kind}_ci_high']:+.2f}]")
                    same = [reading(fit.loc[model], kind) for fit in fits.values()]
                    if cells[0] == "not identified":
                        continue
                    lines.append(f"| {setting} | {model} | {kind} | {cells[0]} | "
                                 f"{cells[1]} | {'yes' if same[0] == same[1] else 'NO'} "
                                 f"({same[0]} / {same[1]}) |")
    return (f"default panel, {n_images} images ({time.perf_counter() - started:.0f} s)\n\n"
            + "\n".join(lines))



def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=80, help="images per data set")
    parser.add_argument("--seeds", type=int, default=3,
                        help="seeds per world (images, captions and sim seed)")
    parser.add_argument("--reps", type=int, default=200, help="noise draws per seed")
    parser.add_argument("--worlds", nargs="+", default=list(WORLDS), choices=list(WORLDS))
    parser.add_argument("--seed", type=int, default=0, help="seed of the noise draws")
    parser.add_argument("--slopes", default="within", choices=list(SLOPES),
                        help="judge slopes of the estimator (selfpref.SLOPES; 'between' "
                             "is the estimator before issue 40)")
    parser.add_argument("--no-interactions", action="store_true",
                        help="leave the judge x generator interaction variance out of "
                             "the intervals (with --slopes between: the estimator before "
                             "issue 40)")
    parser.add_argument("--answers", default="sampled", choices=["sampled", "expected"],
                        help="a data set's scores: parsed from one sampled answer per "
                             "request (default), or the expected score exactly")
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=SETTINGS)
    parser.add_argument("--default-card", action="store_true",
                        help="instead: the default panel's table before and after issue "
                             "40 through the pipeline's path (--images images)")
    args = parser.parse_args(argv)
    if args.default_card:
        print(default_card(args.images))
        return
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    results, checks = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.worlds:
            for seed in range(args.seeds):
                world = build_world(name, 1000 + seed, args.images, Path(tmp))
                scorer = (SampledScorer(world.noise, world.tokenizers)
                          if args.answers == "sampled" else Scorer(world.noise))
                for setting in args.settings:
                    results.append(replicate(world, scorer, setting, args.reps, rng,
                                             args.slopes, not args.no_interactions)
                                   .assign(world=name, setting=setting, seed=seed))
                    checks.append({"world": name, "setting": setting, "seed": seed,
                                   **philautia_check(world, scorer, setting)})
    print(f"{args.images} images, {args.seeds} seeds x {args.reps} draws per world and "
          f"setting, answers {args.answers}, slopes={args.slopes}, "
          f"interactions={not args.no_interactions} "
          f"({time.perf_counter() - started:.0f} s)\n")
    print(markdown(summarise(pd.concat(results, ignore_index=True)), pd.DataFrame(checks)))


if __name__ == "__main__":
    main()
