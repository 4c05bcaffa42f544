"""Self- and family-preference in score points (judgebias.studies.philautia.selfpref,
beyond the paper): exact on a noise-free table, the absorbed fit equals statsmodels with
explicit dummies, and on simulated panels with planted preferences the intervals cover
the planted effects in points where seed 000's philautia score (§4.1) misreads them.
Issue 40: judge slopes estimated within generators are not tilted by a preference for
another model, their two-step covariance matches a cluster bootstrap, the interaction
variance is estimated from the unmodelled cells, and preferences for other models alone
make no own effect significant beyond the nominal rate."""

from __future__ import annotations

import copy
import itertools
import sys

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from helpers.project import REPO

from judgebias.config import validate_params
from judgebias.io.artifacts import write_table
from judgebias.models.context import RunContext
from judgebias.studies.philautia.data import build_synthetic_dataset
from judgebias.studies.philautia.jobs import caption_images, score_captions
from judgebias.studies.philautia.measures import analyse
from judgebias.studies.philautia.params import PhilautiaParams, model_families
from judgebias.studies.philautia.selfpref import (
    build_design,
    fit_absorbed,
    self_preference,
    siblings,
    with_philautia,
)
from judgebias.studies.philautia.slopes import one_factor, one_factor_jacobian, within_slopes
from judgebias.studies.philautia.steps import analysis_scores
from judgebias.studies.philautia.tables import CAPTIONS, IMAGES, SCORES, SELFPREF
from judgebias.study import study_models

MODELS = ["a", "b", "c", "d"]
FAMILIES = {"a": "x", "b": "x", "c": "y", "d": "z"}


def long_table(values: np.ndarray, models=MODELS) -> pd.DataFrame:
    """values[k, g, e] (points) as the long [0, 1] score table."""
    n, m, _ = values.shape
    k, g, e = (a.ravel() for a in np.meshgrid(np.arange(n), np.arange(m), np.arange(m),
                                              indexing="ij"))
    return pd.DataFrame({"image_id": [f"img{i}" for i in k],
                         "generator": np.asarray(models)[g], "evaluator": np.asarray(models)[e],
                         "score": values.ravel() / 100.0})


def additive(n_images: int, own, family, noise: float = 0.0, seed: int = 0) -> np.ndarray:
    """Caption quality + judge leniency + planted own / family points (+ noise)."""
    rng = np.random.default_rng(seed)
    m = len(MODELS)
    caption = 50 + rng.normal(0, 10, (n_images, m, 1))
    leniency = np.array([0.0, 4.0, -3.0, 2.0])[None, None, :]
    sib = siblings(MODELS, FAMILIES)
    planted = np.diag(own) + sib * np.asarray(family)[None, :].T  # [e, g]
    return caption + leniency + planted.T[None] + noise * rng.normal(size=(n_images, m, m))


def test_noise_free_additive_scores_are_recovered_exactly() -> None:
    own, family = [5.0, 0.0, -3.0, 1.5], [2.0, -1.0, 0.0, 0.0]
    table = self_preference(long_table(additive(4, own, family)), MODELS, FAMILIES)
    assert np.allclose(table["own_effect"], own, atol=1e-8)
    assert np.allclose(table["own_se"], 0.0, atol=1e-6)
    # a and b are siblings; c and d have none in the panel: not estimable, said so
    assert table["family_estimable"].tolist() == [True, True, False, False]
    assert np.allclose(table["family_effect"][:2], family[:2], atol=1e-8)
    assert table["family_effect"][2:].isna().all()
    assert np.allclose(table["own_vs_family_effect"][:2], [3.0, 1.0], atol=1e-8)
    assert table["own_identified"].all() and table["family_identified"][:2].all()
    assert (table["own_n"] == 4).all() and (table["family_n"] == [4, 4, 0, 0]).all()


def test_failed_scores_are_dropped_and_counted() -> None:
    long = long_table(additive(6, [3.0, 0, 0, 0], [0, 0, 0, 0], noise=1.0))
    long.loc[[0, 5, 17], "score"] = np.nan
    table = self_preference(long, MODELS, FAMILIES)
    dropped = long.loc[[0, 5, 17], "evaluator"].value_counts()
    assert table.set_index("model")["n_dropped"].to_dict() == {
        m: int(dropped.get(m, 0)) for m in MODELS}
    assert table["n_rows"].sum() == len(long) - 3


@pytest.mark.parametrize(("absorb", "slopes"), [("caption", "between"),
                                               ("image", "between"), ("caption", "none")])
def test_absorbed_fit_equals_explicit_dummies(absorb: str, slopes: str) -> None:
    """Frisch-Waugh-Lovell: the demeaned fit's coefficients equal statsmodels' OLS with
    one dummy per caption (or image); its clustered covariance equals statsmodels' up to
    the documented degrees of freedom (non-absorbed regressors only, Cameron & Miller
    2015 §III.B): (N - K_all) / (N - K). (slopes="within", the default, is two-step:
    tested below.)"""
    long = long_table(additive(9, [4.0, 1, -2, 0], [1.0, 0, 0, 0], noise=3.0, seed=3))
    long = long.drop(index=[2, 40]).reset_index(drop=True)  # unbalanced on purpose
    design = build_design(long, MODELS, FAMILIES, absorb=absorb, slopes=slopes)
    fit = fit_absorbed(design)
    dummies = pd.get_dummies(design.absorbed).to_numpy(float)
    X = np.column_stack([design.X, dummies])
    ref = sm.OLS(design.y, X).fit(cov_type="cluster", cov_kwds={"groups": design.images})
    k = design.X.shape[1]
    assert np.allclose(fit.params, ref.params[:k], atol=1e-8)
    n = len(design.y)
    scale = (n - k) / (n - X.shape[1])
    assert np.allclose(fit.cov * scale, ref.cov_params()[:k, :k], atol=1e-8)
    # and statsmodels on the demeaned design itself gives our covariance
    from judgebias.studies.philautia.slopes import demean_within

    within = sm.OLS(demean_within(design.y, design.absorbed),
                    demean_within(design.X, design.absorbed)).fit(
        cov_type="cluster", cov_kwds={"groups": design.images})
    assert np.allclose(fit.cov, within.cov_params(), atol=1e-8)


def sloped(n_images: int, own, cross=None, noise: float = 0.0, seed: int = 0
           ) -> np.ndarray:
    """Like `additive`, but judges differ in slope on caption quality (the sim's
    ``spread``), generators in mean quality, and cross[e][g] points go to judge e's
    scores of generator g (a preference for another model)."""
    rng = np.random.default_rng(seed)
    m = len(MODELS)
    quality = np.array([8.0, 2.0, -4.0, -10.0])  # a's captions best, d's worst
    caption = quality[None, :, None] + rng.normal(0, 10, (n_images, m, 1))
    slope = np.array([1.0, 0.7, 1.3, 1.0])[None, None, :]
    leniency = np.array([0.0, 4.0, -3.0, 2.0])[None, None, :]
    planted = np.diag(own) + (np.zeros((m, m)) if cross is None else np.asarray(cross))
    return (50 + slope * caption + leniency + planted.T[None]
            + noise * rng.normal(size=(n_images, m, m)))


def test_within_slopes_recover_own_effects_of_sloped_judges_exactly() -> None:
    """Noise-free judges with different slopes: the within-generator slopes (one factor
    of the within-cell covariances) give the exact slope ratios and the own effects."""
    own = [3.0, 0.0, -2.0, 1.0]
    long = long_table(sloped(12, own))
    table = self_preference(long, MODELS, FAMILIES)
    assert np.allclose(table["own_effect"], own, atol=1e-6)
    design = build_design(long, MODELS, FAMILIES)
    slopes = within_slopes(design, 12)
    assert np.allclose(slopes.rho, np.array([1.0, 0.7, 1.3, 1.0]) - 1.0, atol=1e-8)


def test_a_preference_for_another_model_does_not_tilt_the_within_slope() -> None:
    """Issue 40's mechanism: judge d (own captions the worst) adds 2 points to a's
    captions (the best). The generator-level slope ("between") is fitted on a, b and c
    and extrapolated to d: the 2 points tilt it and move d's own effect by more than the
    preference divided by the baseline's size; the within-generator slope is the same
    with and without the preference, and the own effect moves by the intercept share
    only (2 / 2 baseline generators... net of the caption effects)."""
    own = [0.0, 0.0, 0.0, 0.0]
    cross = np.zeros((4, 4))
    cross[3, 0] = 2.0
    plain, liked = long_table(sloped(12, own)), long_table(sloped(12, own, cross))
    for data in (plain, liked):
        assert np.allclose(within_slopes(build_design(data, MODELS, FAMILIES), 12).rho,
                           [0.0, -0.3, 0.3, 0.0], atol=1e-8)
    between = self_preference(liked, MODELS, FAMILIES, slopes="between")["own_effect"]
    within = self_preference(liked, MODELS, FAMILIES)["own_effect"]
    assert abs(within[3]) < abs(between[3])
    assert abs(between[3]) > 2.0 / 3


def test_one_factor_jacobian_matches_finite_differences() -> None:
    """The implicit-function Jacobian of the one-factor fit (delta method of the
    two-step covariance) against central differences of the fit itself."""
    rng = np.random.default_rng(2)
    b = np.array([1.0, 0.8, 1.3, 1.1, 0.9])
    cov = np.outer(b, b) + 0.05 * rng.normal(size=(5, 5))
    cov = (cov + cov.T) / 2
    fit = one_factor(cov)
    upper = np.triu_indices(5, 1)
    numeric = np.empty((5, len(upper[0])))
    for j, (e, f) in enumerate(zip(*upper, strict=True)):
        step = np.zeros((5, 5))
        step[e, f] = step[f, e] = 1e-6
        numeric[:, j] = (one_factor(cov + step) - one_factor(cov - step)) / 2e-6
    assert np.allclose(one_factor_jacobian(cov, fit), numeric, atol=1e-4)


def test_without_a_common_factor_the_slopes_are_left_out_and_said_so() -> None:
    """Two judges cannot give a one-factor fit (one covariance, two loadings): the judge
    slopes are left out (rho = 0, the same fit as slopes=False) with a warning."""
    long = long_table(additive(6, [2.0, 0, 0, 0], [0, 0, 0, 0], noise=1.0))
    long = long[long["evaluator"].isin(["a", "c"]) & long["generator"].isin(["a", "c"])]
    with pytest.warns(RuntimeWarning, match="judge slopes left out"):
        within = self_preference(long, ["a", "c"], FAMILIES)
    plain = self_preference(long, ["a", "c"], FAMILIES, slopes=False)
    assert np.allclose(within["own_effect"], plain["own_effect"], equal_nan=True)


def test_two_step_covariance_matches_a_cluster_bootstrap() -> None:
    """The Murphy-Topel / delta-method covariance of slopes="within" against a cluster
    (image) bootstrap of the whole two-step estimator, on one noisy data set."""
    values = sloped(120, [3.0, 0.0, -2.0, 1.0], noise=6.0, seed=5)
    # interactions=False: the interaction variance is a random effect of the cells, which
    # an image bootstrap holds fixed (tested on its own in test_interactions.py)
    se = self_preference(long_table(values), MODELS, FAMILIES,
                         interactions=False)["own_se"].to_numpy()
    rng = np.random.default_rng(0)
    draws = [self_preference(long_table(values[rng.integers(0, 120, 120)]), MODELS,
                             FAMILIES)["own_effect"].to_numpy() for _ in range(150)]
    ratio = np.std(draws, axis=0, ddof=1) / se
    assert ((ratio > 0.75) & (ratio < 1.33)).all(), ratio


def test_interaction_variance_is_estimated_from_the_unmodelled_cells() -> None:
    """Judge x generator interactions outside the model (preferences for other models)
    as random effects: the method-of-moments tau^2 (`interaction_variance`) is near the
    planted cells' variance when there are some, near 0 when there are none, and the
    intervals widen by it."""
    models = list("abcdefgh")
    families = {"a": "x", "b": "x", "c": "x", "d": "y", "e": "y", "f": "y", "g": "z",
                "h": "w"}
    rng = np.random.default_rng(4)
    n, m = 150, len(models)
    caption = 50 + rng.normal(0, 10, (n, m, 1))
    sib = siblings(models, families)
    free = ~sib & ~np.eye(m, dtype=bool)
    theta = np.where(free, rng.normal(0, 2.0, (m, m)), 0.0)  # [e, g]
    noise = rng.normal(0, 8.0, (n, m, m))
    found = {}
    for name, cells in (("none", 0 * theta), ("planted", theta)):
        long = long_table(caption + cells.T[None] + noise, models)
        fit = fit_absorbed(build_design(long, models, families), interactions=True)
        found[name] = fit.tau2
    assert found["none"] < 0.5
    assert 0.5 * theta[free].var() < found["planted"] < 2 * theta[free].var()
    long = long_table(caption + theta.T[None] + noise, models)
    wide = self_preference(long, models, families)["own_se"]
    narrow = self_preference(long, models, families, interactions=False)["own_se"]
    assert (wide > narrow).all()


def test_preferences_for_other_models_alone_make_no_own_effect_significant() -> None:
    """Issue 40's check on a fast additive world: eight judges with different slopes
    and leniencies, generators of spread quality, and ten +-1-2 point preferences for
    *other* models (most of them for the best or the worst generator, where a slope
    fitted on the generator means is tilted most), none for self: the share of own
    intervals that exclude 0 stays within the binomial band of the nominal 5%."""
    models = list("abcdefgh")
    families = {"a": "x", "b": "x", "c": "x", "d": "y", "e": "y", "f": "y", "g": "z",
                "h": "w"}
    m = len(models)
    quality = np.linspace(12, -12, m)
    slope = np.array([1.0, 0.8, 1.2, 0.9, 1.3, 0.7, 1.1, 1.0])
    leniency = np.linspace(-5, 5, m)
    cross = np.zeros((m, m))  # [e, g]
    for e, g, points in [("a", "h", 2), ("b", "g", -2), ("c", "h", -2), ("d", "a", 2),
                         ("d", "h", -1), ("e", "a", -2), ("f", "b", 2), ("g", "a", 2),
                         ("g", "h", -1), ("h", "a", 2)]:
        cross[models.index(e), models.index(g)] = points
    rng = np.random.default_rng(0)
    rejected = []
    for _ in range(40):
        caption = quality[None, :, None] + rng.normal(0, 10, (100, m, 1))
        values = (50 + slope[None, None, :] * caption + leniency[None, None, :]
                  + cross.T[None] + rng.normal(0, 8, (100, m, m)))
        table = self_preference(long_table(values, models), models, families)
        rejected += list((table["own_ci_low"] > 0) | (table["own_ci_high"] < 0))
    band = 0.05 + 3 * np.sqrt(0.05 * 0.95 / len(rejected))
    assert np.mean(rejected) <= band, np.mean(rejected)


def test_two_family_panel_is_flagged_and_own_minus_family_is_identified() -> None:
    """Exactly two families: "A favours A" is confounded with "A's judges lenient, A's
    captions good" (fit_absorbed); own - family stays identified."""
    fams = {"a": "x", "b": "x", "c": "y", "d": "y"}
    own, family = np.array([4.0, 0, 1, 0]), np.array([2.0, 2.0, 0, 0])
    rng = np.random.default_rng(1)
    values = 50 + rng.normal(0, 10, (5, 4, 1)) + np.zeros((5, 4, 4))
    sib = siblings(MODELS, fams)
    values += (np.diag(own) + sib * family[:, None]).T[None]
    # without judge slopes: with them, 4 models leave more directions unidentified
    table = self_preference(long_table(values), MODELS, fams, slopes=False)
    assert not table["own_identified"].any() and not table["family_identified"].any()
    assert np.allclose(table["own_vs_family_effect"], own - family, atol=1e-8)


def test_selfpref_table_matches_its_schema() -> None:
    long = long_table(additive(5, [1.0, 0, 0, 0], [0, 0, 0, 0], noise=1.0))
    phil = pd.DataFrame({"model": MODELS, "score": [0.1, 0.2, 0.3, 0.4], "ci_low": 0.0,
                         "ci_high": 1.0})
    out = with_philautia(self_preference(long, MODELS, FAMILIES), phil)
    assert list(out.columns) == SELFPREF.names
    assert out["philautia_score"].tolist() == [0.1, 0.2, 0.3, 0.4]


# -------------------------------------------------------------------- simulated panels

N_IMAGES = 200
LUMEN = ["lumen-large", "lumen-base", "lumen-mini"]
CORVID = ["corvid-pro", "corvid-flash", "corvid-lite"]
OPENERS = ["Here we see", "We can see", "Visible here is", "Pictured here is"]
# panel -> {model: (self_preference, family preferences)}, and models in families of
# their own (a third family makes family effects identifiable; the default's two are not)
PANELS = {
    "default": ({}, []),
    # a negative self-preference and a judge without one among self-favouring judges
    "negative_and_none": ({**{m: (0.04, {}) for m in ["lumen-large", "lumen-base",
                                                      "corvid-pro", "corvid-flash"]},
                           "lumen-mini": (0.0, {}), "corvid-lite": (-0.04, {})},
                          ["lumen-mini", *CORVID]),
    # lumen-base favours only its siblings
    "sibling_only": ({"lumen-base": (0.0, {"lumen": 0.04}), "lumen-large": (0.02, {}),
                      "lumen-mini": (0.02, {})}, CORVID),
    # a three-model family favouring each other, no self-preference anywhere
    "three_family": ({**{m: (0.0, {}) for m in LUMEN},
                      **{m: (0.0, {"corvid": 0.03}) for m in CORVID}}, LUMEN),
}


def panel_params(base: dict, name: str) -> dict:
    changes, alone = PANELS[name]
    params = copy.deepcopy(base)
    for model, (self_p, fam) in changes.items():
        sim = params["panel"][model]["sim"]
        sim["self_preference"] = self_p
        sim["preferences"] = {**(sim.get("preferences") or {}), "families": fam}
    for i, model in enumerate(alone):
        params["families"][f"solo{i}"] = {"description": "test", "sim": {"opener": OPENERS[i]}}
        params["panel"][model]["family"] = f"solo{i}"
    return params


def without_own_preferences(params: dict, families: dict) -> dict:
    """The same panel with every judge's self-preference and preference for its own
    families set to 0 (cross-model preferences kept)."""
    null = copy.deepcopy(params)
    for model, fams in families.items():
        sim = null["panel"][model]["sim"]
        sim["self_preference"] = 0.0
        prefs = dict(sim.get("preferences") or {})
        prefs["families"] = {f: b for f, b in (prefs.get("families") or {}).items()
                             if f not in fams}
        sim["preferences"] = prefs
    return null


@pytest.fixture(scope="module")
def simulated(tmp_path_factory, default_params):
    """Per panel: the long table (reference-free setting), the truth in points and the
    fits. The truth comes from the sim itself: the same requests scored by the panel
    with its own/family preferences set to 0 (same per-request noise, since the sim's
    draws are seeded by the request, not the traits); the planted bonus b is about
    100 b points, less where the score's [0, 1] clip binds."""
    root = tmp_path_factory.mktemp("selfpref")
    base = validate_params(default_params)
    images = build_synthetic_dataset(root / "dataset", N_IMAGES, 7, 128, 5)
    images_path = str(root / "images.parquet")
    write_table(images, images_path, IMAGES)
    models = study_models(base, "philautia")
    view = PhilautiaParams.from_params(base)  # the caption prompt and settings: every panel's
    out = {}
    for name in PANELS:
        params = panel_params(base, name)
        params["journal_dir"] = str(root / f"journal-{name}")
        families = model_families(params, models)
        sib = siblings(models, families)
        captions = {}
        for g in models:
            captions[g] = str(root / f"{name}-captions-{g}.parquet")
            write_table(caption_images(RunContext(params), g, images_path,
                                       prompt=view.caption_prompt), captions[g], CAPTIONS)

        def scores(run, cells, tag, captions=captions):
            paths = []
            for e, g in cells:
                path = root / f"{tag}-{e}-{g}.parquet"
                write_table(score_captions(run, e, "ref_free", images_path, captions[g],
                                           spec=view.settings["ref_free"]), path, SCORES)
                paths.append(str(path))
            return analysis_scores(paths, "expected")

        long = scores(RunContext(params), itertools.product(models, models), name)
        null = without_own_preferences(params, families)
        null["journal_dir"] = str(root / f"journal-null-{name}")
        cells = [(e, g) for i, e in enumerate(models) for j, g in enumerate(models)
                 if i == j or sib[i, j]]
        diff = long.merge(scores(RunContext(null), cells, f"null-{name}"),
                          on=["image_id", "generator", "evaluator"], suffixes=("", "_null"))
        diff["points"] = (diff["score"] - diff["score_null"]) * 100
        truth = pd.DataFrame({
            "own": [diff.loc[(diff.evaluator == e) & (diff.generator == e), "points"].mean()
                    for e in models],
            "family": [diff.loc[(diff.evaluator == e) & (diff.generator != e), "points"]
                       .mean() if sib[i].any() else np.nan for i, e in enumerate(models)],
        }, index=models)
        truth["own_vs_family"] = truth["own"] - truth["family"]
        effects = self_preference(long, models, families).set_index("model")
        paper = analyse(long, models, families, n_boot=300, n_permutations=200).philautia
        out[name] = (truth, effects, paper)
    return out


def covered(truth: pd.DataFrame, effects: pd.DataFrame, kind: str) -> pd.Series:
    present = truth[kind].notna()
    t, e = truth.loc[present, kind], effects.loc[present]
    return (e[f"{kind}_ci_low"] <= t) & (t <= e[f"{kind}_ci_high"])


@pytest.mark.slow
def test_planted_effects_in_points_are_recovered(simulated) -> None:
    hits = []
    for name, (truth, effects, _) in simulated.items():
        identified = name != "default"
        assert effects["own_identified"].all() == identified, name
        kinds = ("own", "family", "own_vs_family") if identified else ("own_vs_family",)
        for kind in kinds:
            hits.extend(covered(truth, effects, kind).tolist())
            if kind == "own_vs_family":
                continue
            zero = truth[kind] == 0  # no preference planted: the estimate is small
            assert (effects.loc[zero, f"{kind}_effect"].abs()
                    < 3 * effects.loc[zero, f"{kind}_se"]).all(), (name, kind)
    assert np.mean(hits) >= 0.9, np.mean(hits)
    # the planted values themselves are what the sim says they are, in points
    truth = simulated["three_family"][0]
    assert np.allclose(truth.loc[CORVID, "family"], 3.0, atol=0.5)
    assert (truth.loc[LUMEN, "own"] == 0).all()


@pytest.mark.slow
def test_philautia_score_misreads_what_points_recover(simulated) -> None:
    """Seed 000's philautia score is relative (module docstring of selfpref)."""
    truth, effects, paper = simulated["three_family"]
    # no judge favours itself; the corvid judges favour their siblings: the philautia
    # score calls all three self-disfavouring, the points see no own effect and the
    # family effect
    assert (paper.loc[CORVID, "score"] < 0).all()
    assert (paper.loc[LUMEN, "score"] > 0).all()
    assert ((effects.loc[CORVID, "own_ci_low"] <= 0)
            & (effects.loc[CORVID, "own_ci_high"] >= 0)).all()
    assert (effects.loc[CORVID, "family_ci_low"] > 0).sum() >= 2
    # a judge without self-preference ranks below one that takes 4 points off its own
    truth, effects, paper = simulated["negative_and_none"]
    assert truth.loc["lumen-mini", "own"] == 0 and truth.loc["corvid-lite", "own"] < -3
    assert paper.loc["lumen-mini", "score"] < paper.loc["corvid-lite", "score"]
    assert effects.loc["lumen-mini", "own_effect"] > effects.loc["corvid-lite", "own_effect"]
    # the sibling-only judge: the philautia score shows nothing, the family effect does
    truth, effects, paper = simulated["sibling_only"]
    assert effects.loc["lumen-base", "family_ci_low"] > 0
    assert paper.loc["lumen-base", "score"] < 0


def test_panels_differ_from_the_default(default_params) -> None:
    """The built panels are not the default (each plants something it does not)."""
    base = validate_params(default_params)
    for name in PANELS:
        if name != "default":
            assert panel_params(base, name)["panel"] != base["panel"], name


# ------------------------------------------- issue 20 item 14: own effects per setting


@pytest.fixture(scope="module")
def eight_judges(tmp_path_factory):
    """benchmarks/selfpref_coverage.py's `eight_judges` world on 16 images: the sim's
    systematic judgement of every pipeline G-VEval request, both settings."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    import selfpref_coverage as bench

    world = bench.build_world("eight_judges", 1000, 16, tmp_path_factory.mktemp("eight"))
    return bench, world, bench.Scorer(world.noise)


def test_settings_share_the_sims_judgements_on_correct_references(eight_judges) -> None:
    """The synthetic references are correct captions, so the reference-based accuracy
    (0.7 image + 0.3 reference agreement) equals the reference-free one: the two settings
    judge every caption alike and differ only in the per-request noise. A difference in
    coverage between them on one data set is a difference between two noise draws."""
    _, world, _ = eight_judges
    assert np.allclose(world.planted["ref_based"], world.planted["ref_free"], atol=1e-12)


@pytest.mark.parametrize("setting", ["ref_free", "ref_based"])
def test_own_effect_does_not_absorb_the_family_bonus(eight_judges, setting) -> None:
    """Planted: lumen favours its siblings by +0.04 (about 3.8 points after the clip);
    lumen-large +0.04 for itself, lumen-base nothing for itself (sibling-only),
    corvid-lite -0.04. The sim gives an own caption the self-preference only (seed 001
    §2: self-preference is how much more a judge favours its own text; the family bonus
    goes to siblings), and the estimator's own effect is that total: on the expected
    scores (noise averaged out) each own effect is its truth, not truth + family bonus,
    and the negative one is not overstated."""
    bench, world, scorer = eight_judges
    truth = bench.truth(world, scorer, setting)
    long = bench.long_table(world, scorer.mean(world.planted[setting]))
    fit = self_preference(long, world.models, world.families).set_index("model")
    assert np.allclose(fit["own_effect"], truth["own"], atol=0.3), fit["own_effect"]
    lumen = ["lumen-large", "lumen-base", "lumen-mini"]
    assert (truth.loc[lumen, "family"] > 3).all()
    assert np.allclose(fit.loc[lumen, "family_effect"], truth.loc[lumen, "family"], atol=0.3)
    assert abs(fit.loc["lumen-base", "own_effect"]) < 0.3
    assert fit.loc["corvid-lite", "own_effect"] == pytest.approx(
        truth.loc["corvid-lite", "own"], abs=0.3)
    assert truth.loc["corvid-lite", "own"] < -3


def test_expected_score_curve_is_the_sims_mean_score() -> None:
    """Hand check of the benchmark's score layer: away from the bounds the expected score
    of the sim's distribution is 100 x opinion; at opinion 1 the truncation to 0..100
    pulls it down to the mean of a half-normal, 100 - 100 noise sqrt(2 / pi) (noise 0.08:
    93.6; 93.9 on the integer scores)."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    import selfpref_coverage as bench

    curve = bench.expected_score_curve(0.08)
    assert np.interp(0.5, bench.GRID, curve) == pytest.approx(50.0, abs=1e-6)
    assert np.interp(1.0, bench.GRID, curve) == pytest.approx(100 - 8 * np.sqrt(2 / np.pi),
                                                              abs=0.5)
