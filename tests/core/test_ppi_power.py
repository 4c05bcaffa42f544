"""judgebias.stats.ppi's planning half: the predicted half-width of a PPI++ interval
(`ppi_halfwidth`), the labels a target half-width needs (`labels_for_width`), checked by
simulation (the realised mean half-width of `ppi_mean` at the predicted count is the
target's, to a few percent); the pilot's moments (`label_moments`), the few-labels
warning and the small-sample t variant (measured in benchmarks/ppi_coverage.py); and
the core's `plan --power` output with a study's section (judgebias.plan)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from judgebias.plan import PowerPlan, PowerSection, power_json, power_report
from judgebias.stats.power import PowerSettings
from judgebias.stats.ppi import (
    human_only_mean,
    normal_interval,
    ppi_mean,
    welch_df,
)
from judgebias.stats.ppi_power import (
    FEW_LABELS,
    LabelMoments,
    few_labels,
    label_moments,
    labels_for_width,
    ppi_halfwidth,
)

Z975 = 1.959963984540054
# A judge biased by +1 with noise sd 0.8 on labels of sd 1.5: rho = 1.5 / sqrt(2.89)
WORLD = LabelMoments(var_y=2.25, var_f=2.25 + 0.64, cov=2.25)
ITEMS = 1000


def draw(rng: np.random.Generator, n_items: int = ITEMS) -> tuple[np.ndarray, np.ndarray]:
    y = 5.0 + 1.5 * rng.standard_normal(n_items)
    return y, y + 1.0 + 0.8 * rng.standard_normal(n_items)


def test_the_halfwidth_by_hand():
    """A fixed lambda: arXiv 2311.01453's lam^2 Var(f) / N + Var(Y - lam f) / n, each
    term times (count - 1) / count (ppi_mean's divisor-n variances). The tuned lambda
    adds its own noise: normal around Cov / ((1 + n/N) Var(f)) with variance (Var(Y)
    Var(f) + Cov^2) / n, its distance from beta = Cov / Var(f) costing Var(f) E[(lam -
    beta)^2] in the rectifier, less 2 Var(Y - beta f) / n for fitting the sample."""
    moments = LabelMoments(var_y=4.0, var_f=5.0, cov=3.0)
    fixed = 0.5 ** 2 * 5.0 * 89 / 90 ** 2 + (4 - 2 * 0.5 * 3 + 0.5 ** 2 * 5) * 9 / 100
    assert ppi_halfwidth(moments, 10, 90, lam=0.5) == pytest.approx(Z975 * math.sqrt(fixed))
    # lambda 0: the human-only interval, whatever N is
    human = Z975 * math.sqrt(4.0 * 9 / 100)
    assert ppi_halfwidth(moments, 10, 90, lam=0.0) == pytest.approx(human)
    assert ppi_halfwidth(moments, 10, 0, lam=0.0) == pytest.approx(human)
    # the tuned lambda, unclipped: mean mu, variance tau^2
    beta, mu = 3.0 / 5.0, 3.0 / ((1 + 10 / 90) * 5.0)
    tau2 = (4.0 * 5.0 + 9.0) / 10 / ((1 + 10 / 90) * 5.0) ** 2
    regression = 4.0 - 9.0 / 5.0
    rectifier = (regression + 5.0 * ((mu - beta) ** 2 + tau2)) * 9 / 10 - 2 * regression / 10
    tuned = (mu ** 2 + tau2) * 5.0 * 89 / 90 ** 2 + rectifier / 10
    assert ppi_halfwidth(moments, 10, 90, clip=False) == pytest.approx(
        Z975 * math.sqrt(tuned))
    # with lambda far inside [0, 1], clipping changes nothing
    assert ppi_halfwidth(moments, 40, 960) == pytest.approx(
        ppi_halfwidth(moments, 40, 960, clip=False), rel=1e-3)
    # many labels: the paper's variance at the optimal lambda, Var(Y)((1 - rho^2) / n +
    # rho^2 / (n + N))
    rho2 = 9.0 / 20.0
    assert ppi_halfwidth(moments, 10 ** 5, 10 ** 7) == pytest.approx(
        Z975 * math.sqrt(4.0 * ((1 - rho2) / 1e5 + rho2 / (1e5 + 1e7))), rel=1e-4)
    # a compressed judge's lambda (above 1) is clipped to 1, as ppi_mean clips it
    compressed = LabelMoments(var_y=4.0, var_f=1.0, cov=2.0)
    assert ppi_halfwidth(compressed, 400, 9600) == pytest.approx(
        ppi_halfwidth(compressed, 400, 9600, lam=1.0), rel=1e-3)
    assert ppi_halfwidth(compressed, 400, 9600, clip=False) < ppi_halfwidth(
        compressed, 400, 9600)
    # a constant judge carries no information: lambda 0
    assert ppi_halfwidth(LabelMoments(4.0, 0.0, 0.0), 10, 90) == pytest.approx(human)
    assert ppi_halfwidth(moments, 10, 90, confidence=0.9) == pytest.approx(
        stats.norm.ppf(0.95) / Z975 * ppi_halfwidth(moments, 10, 90))


def test_labels_for_width_inverts_the_halfwidth():
    n = labels_for_width(0.15, WORLD, ITEMS)
    assert n is not None
    assert ppi_halfwidth(WORLD, n, ITEMS - n) <= 0.15 < ppi_halfwidth(WORLD, n - 1, ITEMS - n + 1)
    human = labels_for_width(0.15, WORLD, ITEMS, human_only=True)
    assert human is not None and human > 2.5 * n  # rho^2 = 0.78: the judge saves most
    # the classical count, (z sd / w)^2, up to the divisor-n variance's (n - 1) / n
    assert human == pytest.approx((Z975 * 1.5 / 0.15) ** 2, abs=2)
    # every item labelled is the floor: a narrower width needs more items; near it the
    # judge still saves a third of the labels
    floor = Z975 * math.sqrt(WORLD.var_y / ITEMS)
    assert labels_for_width(0.95 * floor, WORLD, ITEMS) is None
    assert labels_for_width(0.95 * floor, WORLD, ITEMS, human_only=True) is None
    near = (labels_for_width(1.1 * floor, WORLD, ITEMS),
            labels_for_width(1.1 * floor, WORLD, ITEMS, human_only=True))
    assert near[0] is not None and near[1] is not None and near[0] < 0.7 * near[1]
    assert labels_for_width(100.0, WORLD, ITEMS) == 2
    with pytest.raises(ValueError, match="positive"):
        labels_for_width(0.0, WORLD, ITEMS)


@pytest.mark.parametrize("width", [0.15, 0.25])
def test_the_predicted_count_gives_the_target_width_in_simulation(width):
    """At the predicted n (about 120 and 35 labels of 1,000 items), `ppi_mean`'s mean
    half-width over 1,000 data sets is the predicted one (to 3 %), so at most the target
    and within a few percent of it; the same for the human-only count."""
    rng = np.random.default_rng(7)
    n = labels_for_width(width, WORLD, ITEMS)
    human = labels_for_width(width, WORLD, ITEMS, human_only=True)
    assert n is not None and human is not None
    realised, realised_human = [], []
    for _ in range(1000):
        y, f = draw(rng)
        result = ppi_mean(y[:n], f[:n], f[n:])
        realised.append((result.ci_high - result.ci_low) / 2)
        plain = human_only_mean(y[:human])
        realised_human.append((plain.ci_high - plain.ci_low) / 2)
    predicted = ppi_halfwidth(WORLD, n, ITEMS - n)
    assert predicted <= width
    assert np.mean(realised) == pytest.approx(predicted, rel=0.03)
    assert np.mean(realised) == pytest.approx(width, rel=0.03)
    assert np.mean(realised_human) == pytest.approx(width, rel=0.03)


def test_label_moments_are_a_pilots_estimates():
    rng = np.random.default_rng(3)
    y, f = draw(rng, 400)
    moments = label_moments(y[:60], f[:60], f[60:])
    assert moments.var_y == pytest.approx(np.var(y[:60], ddof=1))
    assert moments.var_f == pytest.approx(np.var(f, ddof=1))
    rho = np.corrcoef(y[:60], f[:60])[0, 1]
    assert moments.cov == pytest.approx(rho * math.sqrt(moments.var_y * moments.var_f))
    # close to the world's, at 60 labels
    assert moments.cov / math.sqrt(moments.var_y * moments.var_f) == pytest.approx(
        1.5 / math.sqrt(2.89), abs=0.05)
    # a judge that does not vary on the labelled items: no correlation
    flat = label_moments([1.0, 2.0, 3.0], [4.0, 4.0, 4.0], [1.0, 7.0])
    assert flat.cov == 0.0
    with pytest.raises(ValueError, match="NaN"):
        label_moments([1.0, np.nan], [1.0, 2.0], [1.0, 2.0])


def test_moments_must_be_a_covariance_matrix():
    with pytest.raises(ValueError, match="not a covariance"):
        LabelMoments(var_y=1.0, var_f=1.0, cov=1.5)
    with pytest.raises(ValueError, match="variances >= 0"):
        LabelMoments(var_y=-1.0, var_f=1.0, cov=0.0)
    with pytest.raises(ValueError, match="at least 2"):
        ppi_halfwidth(WORLD, 1, 100)


def test_few_labels_warns_below_the_threshold_only():
    assert few_labels(FEW_LABELS) is None and few_labels(500) is None
    text = few_labels(12)
    assert text is not None and "12 labelled items" in text and f"below {FEW_LABELS}" in text
    assert few_labels(12, minimum=10) is None


def test_the_t_variant_is_the_student_interval_and_welch_for_ppi():
    rng = np.random.default_rng(5)
    y, f = draw(rng, 50)
    low, high = stats.t.interval(0.95, 9, loc=y[:10].mean(),
                                 scale=np.std(y[:10], ddof=1) / math.sqrt(10))
    result = human_only_mean(y[:10], interval="t")
    assert (result.ci_low, result.ci_high) == pytest.approx((low, high))
    zero = ppi_mean(y[:10], f[:10], f[10:], lam=0.0, interval="t")
    assert (zero.ci_low, zero.ci_high) == pytest.approx((low, high))
    tuned, t = ppi_mean(y[:10], f[:10], f[10:]), ppi_mean(y[:10], f[:10], f[10:],
                                                          interval="t")
    assert t.estimate == tuned.estimate and t.lam == tuned.lam
    assert t.ci_high - t.ci_low > tuned.ci_high - tuned.ci_low
    a = (t.lam * f[10:]).var(ddof=1) / 40
    b = (y[:10] - t.lam * f[:10]).var(ddof=1) / 10
    df = (a + b) ** 2 / (a ** 2 / 39 + b ** 2 / 9)
    assert welch_df((a, b), (40, 10)) == pytest.approx(df)
    assert t.ci_high - t.estimate == pytest.approx(stats.t.ppf(0.975, df) * math.sqrt(a + b))
    assert welch_df((0.0, 0.0), (5, 5)) == math.inf
    one_sided = ppi_mean(y[:10], f[:10], f[10:], interval="t", alternative="larger")
    assert one_sided.ci_low == pytest.approx(t.estimate - stats.t.ppf(0.95, df) * t.se)
    assert normal_interval(0.0, 1.0, df=math.inf) == pytest.approx((-Z975, Z975))
    with pytest.raises(ValueError, match="interval must be one of"):
        ppi_mean(y[:10], f[:10], f[10:], interval="bootstrap")  # type: ignore[arg-type]


def test_a_target_halfwidth_must_be_positive():
    assert PowerSettings(halfwidth=0.05).halfwidth == 0.05
    for bad in (0.0, -1.0, math.nan):
        with pytest.raises(ValueError, match="half-width"):
            PowerSettings(halfwidth=bad)


def test_the_power_output_keeps_its_shape_and_adds_a_studys_section():
    """Without a study section `--json` is the card's rows as before; with one, an
    object of the card's rows and the study's; the text is the card's, then the
    section's lines."""
    settings = PowerSettings()
    empty = pd.DataFrame(columns=["model", "study", "measure"])
    assert power_json(PowerPlan(empty)) == []
    section = PowerSection(["human labels: 40"], [{"task": "t", "labels": 40}])
    plan = PowerPlan(empty, {"leaderboard": section})
    assert power_json(plan) == {"card": [], "leaderboard": [{"task": "t", "labels": 40}]}
    text = power_report(plan, settings)
    assert text.startswith("no powered measure") and text.endswith("\n\nhuman labels: 40")
