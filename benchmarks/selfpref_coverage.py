"""Benchmark: coverage of the score-unit self- and family-preference intervals, per setting.

    .venv/bin/python benchmarks/selfpref_coverage.py [--images 80] [--seeds 3] [--reps 200]

Why: `judgebias.studies.philautia.selfpref` gives each judge's own-caption and family
effect in score points with a 95% interval (image-clustered OLS, beyond seed 000). Issue
20 item 14 saw, on one planted 8-judge panel, 16 of 16 intervals cover in ``ref_based``
but 13 of 16 in ``ref_free``. This measures the coverage of every effect's interval over
many simulated data sets, in both settings, on planted worlds the default does not use.

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

Where the scores come from. Each world's panel is built in ``params.yaml`` form and
validated; per seed, the synthetic images are built (`build_synthetic_dataset`), every
generator captions them through the pipeline's requests (`build_requests` with the
philautia caption task) and the sim backend (`build_backend`), and every evaluator's
systematic judgement ``m`` of every caption is what the sim computes for the pipeline's
G-VEval request of that setting (`SimBackend.evaluation` on the request's image, caption
and references: accuracy, style bonus, clip). The answer noise is then drawn with numpy,
as the sim draws it: the opinion ``m' = clip(m + noise z, 0, 1)`` with ``z ~ N(0, 1)``
per request (the sim seeds z by the request's hash: independent across requests), and
the score the analysis reads is the expected score ``sum_n n p(n | m')`` with
``p = exp(score_logprobs(m', noise))``. The pipeline's parser estimates that expectation
without bias from one sampled answer's top-10 log-probs (benchmarks/
expected_score_bias.py); the residual of that estimate is independent answer noise, left
out here (it widens the intervals; the clustered covariance absorbs it like any other).

Truth in points (what the tests call the planted effect): the mean over the judge's own
captions (family: its siblings' captions) of the expected score with the planted
preferences minus the expected score of the same request with the judge's self- and
own-family preferences set to 0 (cross-model preferences kept), both averaged over z by
Gauss-Hermite quadrature. A planted bonus b is about 100 b points, less where the clip
binds.

Columns: ``truth`` (points), ``bias`` (mean estimate - truth), ``coverage`` of the 95%
interval over seeds x reps data sets, ``MC se`` = sqrt(0.95 * 0.05 / n), ``ok`` when
|coverage - 0.95| <= 3 MC se. Prints Markdown. The full run's table (80 images, 2 seeds
x 200 draws, about 19 minutes on two busy cores) is in the docstring of
`judgebias.studies.philautia.selfpref`.
"""

from __future__ import annotations

import argparse
import copy
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

from judgebias.config import validate_params
from judgebias.data.synthetic import build_synthetic_dataset
from judgebias.judging.tasks import build_requests
from judgebias.models.registry import build_backend
from judgebias.models.sim import latent_mean, parse_evaluation_prompt, score_logprobs
from judgebias.studies.philautia.jobs import caption_task, judge_task
from judgebias.studies.philautia.params import model_families
from judgebias.studies.philautia.selfpref import self_preference, siblings

REPO = Path(__file__).resolve().parents[1]
SETTINGS = ("ref_based", "ref_free")
LUMEN = ["lumen-large", "lumen-base", "lumen-mini"]
CORVID = ["corvid-pro", "corvid-flash", "corvid-lite"]
FINCH = {"finch-a": ("boldly", 0.85, 0.5), "finch-b": ("calmly", 0.7, 0.55)}
# world -> ({model: (self_preference, family preferences)}, keep cross-model preferences,
#           models moved to a family of their own)
WORLDS: dict[str, tuple[dict[str, tuple[float, dict[str, float]]], bool, list[str]]] = {
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
}
SOLO_OPENERS = ("Pictured here is", "Visible here is")
GRID = np.linspace(0.0, 1.0, 4001)  # opinions at which the expected score is tabulated
NODES, WEIGHTS = np.polynomial.hermite_e.hermegauss(61)
WEIGHTS = WEIGHTS / WEIGHTS.sum()


def world_params(name: str, seed: int) -> dict[str, Any]:
    """The default params.yaml with the world's panel (validated), backend seed `seed`."""
    prefs, keep_cross, alone = WORLDS[name]
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
    for model, (self_p, family) in prefs.items():
        sim = params["panel"][model]["sim"]
        cross = (sim.get("preferences") or {}).get("models", {}) if keep_cross else {}
        sim.update(self_preference=self_p,
                   preferences={"models": dict(cross), "families": dict(family)})
    for i, model in enumerate(alone):
        params["families"][f"solo{i}"] = {"description": "benchmark",
                                          "sim": {"opener": SOLO_OPENERS[i]}}
        params["panel"][model]["family"] = f"solo{i}"
    params["philautia"]["models"] = list(prefs)
    return validate_params(params)


def without_own_preferences(config: Mapping[str, Any], models: Sequence[str]
                            ) -> dict[str, Any]:
    """The same world with each judge's self-preference and its preference for its own
    families at 0 (cross-model preferences kept): the truth's counterfactual."""
    null = copy.deepcopy(dict(config))
    families = model_families(config, models)
    for model in models:
        own = families[model]
        own = {own} if isinstance(own, str) else set(own)
        sim = null["panel"][model]["sim"]
        prefs = dict(sim.get("preferences") or {})
        prefs["families"] = {f: b for f, b in (prefs.get("families") or {}).items()
                             if f not in own}
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
    planted: Mapping[str, np.ndarray]
    null: Mapping[str, np.ndarray]


def captions_of(config: Mapping[str, Any], generator: str, images: pd.DataFrame
                ) -> list[str]:
    """The generator's caption of every image: the pipeline's caption requests, answered
    by the sim backend."""
    requests, _ = build_requests(config, generator, caption_task(config), images)
    backend, _ = build_backend(config, generator, "generator")
    answers = [backend.answer(r) for r in requests]
    failed = [a.error for a in answers if a.status != "ok"]
    if failed:
        raise RuntimeError(f"{generator}: caption failed: {failed[0]}")
    return [a.text for a in answers]


def judgements(config: Mapping[str, Any], null: Mapping[str, Any], evaluator: str,
               setting: str, rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The evaluator's systematic judgement m of each row's caption for the setting's
    G-VEval request, as the sim computes it (`SimBackend.evaluation`), and the same with
    its own preferences removed (the sim's `style_bonus` of the null world)."""
    requests, _ = build_requests(config, evaluator, judge_task(config, setting), rows)
    backend, _ = build_backend(config, evaluator, "evaluator")
    backend0, _ = build_backend(null, evaluator, "evaluator")
    model = backend.models[config["panel"][evaluator]["model_id"]]
    model0 = backend0.models[null["panel"][evaluator]["model_id"]]
    planted, removed = [], []
    for request in requests:
        caption, references = parse_evaluation_prompt(request.prompt)
        result = backend.evaluation(model, backend.perceive(request), caption, references)
        planted.append(result.mean)
        removed.append(latent_mean(model0, result.accuracy,
                                   backend0.style_bonus(model0, caption)))
    return np.array(planted), np.array(removed)


def build_world(name: str, seed: int, n_images: int, workdir: Path) -> World:
    """Images, captions and judgements of one seed of a world (both settings)."""
    config = world_params(name, seed)
    models = list(config["philautia"]["models"])
    null = without_own_preferences(config, models)
    images = build_synthetic_dataset(workdir / f"{name}-{seed}", n_images, seed, 128, 5)
    images["status"] = "ok"
    planted = {s: np.zeros((len(models), len(models), n_images)) for s in SETTINGS}
    removed = {s: np.zeros_like(planted[s]) for s in SETTINGS}
    for j, generator in enumerate(models):
        rows = images.assign(generator=generator,
                             caption=captions_of(config, generator, images))
        for i, evaluator in enumerate(models):
            for setting in SETTINGS:
                planted[setting][i, j], removed[setting][i, j] = judgements(
                    config, null, evaluator, setting, rows)
    noise = np.array([config["panel"][m]["sim"]["noise"] for m in models], dtype=float)
    return World(models, model_families(config, models),
                 images["image_id"].to_numpy(), noise, planted, removed)


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
              rng: np.random.Generator) -> pd.DataFrame:
    """`reps` data sets of one seed and setting: each effect's estimate, interval and
    whether it covers the truth."""
    target = truth(world, scorer, setting)
    means = world.planted[setting]
    rows = []
    for rep in range(reps):
        scores = scorer(means, rng.standard_normal(means.shape))
        fit = self_preference(long_table(world, scores), world.models, world.families)
        for kind in ("own", "family"):
            true = target[kind].to_numpy()
            low, high = fit[f"{kind}_ci_low"].to_numpy(), fit[f"{kind}_ci_high"].to_numpy()
            rows.append(pd.DataFrame({
                "rep": rep, "model": world.models, "effect": kind, "truth": true,
                "estimate": fit[f"{kind}_effect"].to_numpy(),
                "covered": (low <= true) & (true <= high)}).dropna(subset=["truth"]))
    return pd.concat(rows, ignore_index=True)


def summarise(results: pd.DataFrame) -> pd.DataFrame:
    """Coverage per world, setting, judge and effect, with its Monte-Carlo error."""
    keys = ["world", "setting", "model", "effect"]
    out = results.groupby(keys, sort=False).agg(
        truth=("truth", "mean"), estimate=("estimate", "mean"),
        coverage=("covered", "mean"), n=("covered", "size")).reset_index()
    out["bias"] = out["estimate"] - out["truth"]
    out["mc_se"] = np.sqrt(0.95 * 0.05 / out["n"])
    out["ok"] = (out["coverage"] - 0.95).abs() <= 3 * out["mc_se"]
    return out


def markdown(summary: pd.DataFrame) -> str:
    lines = ["| world | setting | judge | effect | truth (pts) | bias (pts) | coverage | "
             "MC se | ok |", "|---|---|---|---|---:|---:|---:|---:|---|"]
    for row in summary.itertuples():
        lines.append(f"| {row.world} | {row.setting} | {row.model} | {row.effect} | "
                     f"{row.truth:.2f} | {row.bias:+.2f} | {row.coverage:.3f} | "
                     f"{row.mc_se:.3f} | {'yes' if row.ok else 'NO'} |")
    pooled = summary.groupby(["world", "setting"], sort=False).apply(
        lambda s: pd.Series({"coverage": np.average(s["coverage"], weights=s["n"]),
                             "n": s["n"].sum(), "ok": s["ok"].sum(), "k": len(s)}),
        include_groups=False).reset_index()
    lines += ["", "| world | setting | pooled coverage | intervals | effects within 3 MC se |",
              "|---|---|---:|---:|---:|"]
    for row in pooled.itertuples():
        lines.append(f"| {row.world} | {row.setting} | {row.coverage:.3f} | {int(row.n)} | "
                     f"{int(row.ok)} of {int(row.k)} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=80, help="images per data set")
    parser.add_argument("--seeds", type=int, default=3,
                        help="seeds per world (images, captions and sim seed)")
    parser.add_argument("--reps", type=int, default=200, help="noise draws per seed")
    parser.add_argument("--worlds", nargs="+", default=list(WORLDS), choices=list(WORLDS))
    parser.add_argument("--seed", type=int, default=0, help="seed of the noise draws")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.worlds:
            for seed in range(args.seeds):
                world = build_world(name, 1000 + seed, args.images, Path(tmp))
                scorer = Scorer(world.noise)
                for setting in SETTINGS:
                    results.append(replicate(world, scorer, setting, args.reps, rng)
                                   .assign(world=name, setting=setting, seed=seed))
    print(f"{args.images} images, {args.seeds} seeds x {args.reps} draws per world and "
          f"setting ({time.perf_counter() - started:.0f} s)\n")
    print(markdown(summarise(pd.concat(results, ignore_index=True))))


if __name__ == "__main__":
    main()
