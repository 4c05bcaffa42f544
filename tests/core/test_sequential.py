"""judgebias.stats.sequential: the Lan-DeMets boundaries against the published values
(O'Brien-Fleming-type and Pocock-type, five equal looks), the fixed design at K = 1, the
crossing probabilities of unequal looks by Genz's multivariate normal integration and by
200,000 simulated Brownian paths, earlier boundaries unchanged by later looks, a finer
grid changing nothing, input errors, and the decisions. The study-level check (type-I
error, coverage and calls saved on recorded score tables): benchmarks/waves_validity.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special, stats

from judgebias.stats import sequential
from judgebias.stats.sequential import (
    SPENDING,
    critical_values,
    decision,
    look_level,
    spent_alpha,
    wave_fractions,
)

EQUAL5 = (0.2, 0.4, 0.6, 0.8, 1.0)
UNEQUAL = (0.05, 0.25, 0.6, 0.85, 1.0)  # the first look spends ~0 under O'Brien-Fleming


def crossed_by(fractions, c, alpha: float = 0.05, tol: float = 1e-5) -> np.ndarray:
    """P(|Z_j| >= c_j for some j <= k), k = 1..K, by Genz's integration (scipy)."""
    t = np.asarray(fractions)
    cov = np.sqrt(np.minimum.outer(t, t) / np.maximum.outer(t, t))  # sqrt(t_j / t_k)
    out = []
    for k in range(1, len(t) + 1):
        finite = np.isfinite(c[:k])
        idx = np.flatnonzero(finite)
        if idx.size == 0:  # no boundary yet
            out.append(0.0)
            continue
        mvn = stats.multivariate_normal(np.zeros(idx.size), cov[np.ix_(idx, idx)],
                                        maxpts=1_000_000, abseps=tol, releps=0)
        out.append(1.0 - mvn.cdf(c[idx], lower_limit=-c[idx], rng=np.random.default_rng(0)))
    return np.array(out)


def test_obrien_fleming_matches_the_published_boundaries():
    # Lan-DeMets O'Brien-Fleming-type, two-sided 0.05 (alpha/2 per side, as gsDesign's
    # sfLDOF with one-sided 0.025, ldbounds and rpact), five equal looks
    c = critical_values(EQUAL5, 0.05, "obrien_fleming")
    assert c == pytest.approx([4.877, 3.357, 2.680, 2.290, 2.031], abs=5e-4)
    # the spending function: alpha/2 per side by 2 - 2 Phi(z_{1-a/2} / sqrt(t)), a = 0.025
    z = stats.norm.ppf(1 - 0.025 / 2)
    for t in (0.01, 0.2, 0.5, 0.9):
        assert spent_alpha(t, 0.05) == pytest.approx(2 * (2 - 2 * stats.norm.cdf(
            z / math.sqrt(t))), rel=1e-9)
    # the crossing probabilities are the spent alpha, by an independent integration
    assert crossed_by(EQUAL5, c) == pytest.approx(
        [spent_alpha(t, 0.05) for t in EQUAL5], abs=3e-5)


def test_pocock_boundaries_and_their_last_look():
    c = critical_values(EQUAL5, 0.05, "pocock")
    # the first four as published (2.438, 2.427, 2.410, 2.397); the fifth is 2.386, not
    # the 2.391 sometimes quoted: 2.391 crosses with probability 0.04986 in all, not 0.05
    assert c == pytest.approx([2.438, 2.427, 2.410, 2.397, 2.386], abs=5e-4)
    spent = [spent_alpha(t, 0.05, "pocock") for t in EQUAL5]
    assert spent == pytest.approx([0.05 * math.log(1 + (math.e - 1) * t) for t in EQUAL5])
    assert crossed_by(EQUAL5, c) == pytest.approx(spent, abs=3e-5)
    quoted = np.array([*c[:4], 2.391])
    assert crossed_by(EQUAL5, quoted)[-1] < 0.05 - 1e-4


def test_one_look_at_the_end_is_the_fixed_design():
    for spending in SPENDING:
        for alpha in (0.05, 0.01, 0.2):
            (c,) = critical_values([1.0], alpha, spending)
            assert c == -special.ndtri(alpha / 2)
            assert c == pytest.approx(stats.norm.ppf(1 - alpha / 2), rel=1e-15)
    assert critical_values([1.0])[0] == pytest.approx(1.959964, abs=1e-6)
    assert look_level(critical_values([1.0])[0]) == pytest.approx(0.95, abs=1e-15)


@pytest.mark.parametrize("spending", SPENDING)
def test_unequal_looks_spend_as_planned(spending):
    c = critical_values(UNEQUAL, 0.05, spending)
    spent = np.array([spent_alpha(t, 0.05, spending) for t in UNEQUAL])
    if spending == "obrien_fleming":
        assert spent[0] < sequential.NEGLIGIBLE and np.isinf(c[0])  # cannot stop there
        assert np.isfinite(c[1:]).all()
    assert crossed_by(UNEQUAL, c) == pytest.approx(spent, abs=3e-5)
    assert c[-1] > stats.norm.ppf(0.975)  # peeking costs at the last look


@pytest.mark.parametrize("fractions", [EQUAL5, UNEQUAL])
@pytest.mark.parametrize("spending", SPENDING)
def test_monte_carlo_crossing(fractions, spending):
    """200,000 Brownian paths under the null: the share crossing by look k is alpha*(t_k)
    (Monte-Carlo se 0.0005 at 0.05)."""
    t = np.asarray(fractions)
    c = critical_values(t, 0.05, spending)
    rng = np.random.default_rng(20240545)
    steps = rng.standard_normal((200_000, t.size)) * np.sqrt(np.diff(t, prepend=0.0))
    z = steps.cumsum(axis=1) / np.sqrt(t)
    crossed = np.maximum.accumulate(np.abs(z) >= c, axis=1).mean(axis=0)
    spent = [spent_alpha(x, 0.05, spending) for x in t]
    assert crossed == pytest.approx(spent, abs=0.002)
    assert crossed[-1] == pytest.approx(0.05, abs=0.002)
    # the same paths at the fixed level at every look: the peeking problem
    naive = (np.abs(z) >= stats.norm.ppf(0.975)).any(axis=1).mean()
    assert naive > 0.1


def test_earlier_boundaries_do_not_move_when_looks_are_added():
    for spending in SPENDING:
        full = critical_values((0.1, 0.3, 0.45, 0.7, 0.9, 1.0), 0.05, spending)
        for k in range(1, 6):
            assert np.array_equal(critical_values((0.1, 0.3, 0.45, 0.7, 0.9, 1.0)[:k],
                                                  0.05, spending), full[:k])
        other = critical_values((0.1, 0.3, 0.5, 1.0), 0.05, spending)
        assert np.array_equal(other[:2], full[:2])


def test_a_finer_grid_changes_nothing(monkeypatch):
    cases = [EQUAL5, UNEQUAL, tuple(np.arange(1, 11) / 10), (0.3, 0.31, 0.9, 0.905, 1.0)]
    plain = {(f, s): critical_values(f, 0.05, s) for f in cases for s in SPENDING}
    monkeypatch.setattr(sequential, "_NODES_PER_SD", 8.0)
    monkeypatch.setattr(sequential, "_MIN_NODES", 128)
    monkeypatch.setattr(sequential, "_MAX_NODES", 4096)
    for (f, s), c in plain.items():
        assert critical_values(f, 0.05, s) == pytest.approx(c, abs=1e-7)


def test_spent_alpha_ends():
    for spending in SPENDING:
        assert spent_alpha(0.0, 0.05, spending) == 0.0
        assert spent_alpha(1.0, 0.05, spending) == 0.05
        assert spent_alpha(1.5, 0.05, spending) == 0.05
        values = [spent_alpha(t, 0.05, spending) for t in np.linspace(0.01, 1, 50)]
        assert np.all(np.diff(values) > 0)
    assert spent_alpha(0.5, 0.05, "obrien_fleming") < spent_alpha(0.5, 0.05, "pocock")


def test_look_level_is_the_rci_level():
    assert look_level(math.inf) == 1.0
    assert look_level(0.0) == 0.0
    for c in (1.0, 1.959964, 2.031, 3.357, 4.877, 6.0):
        level = look_level(c)
        # what selfpref does with ci: its quantile is t_df.ppf(0.5 + ci / 2) = t_df.ppf(Phi(c))
        assert special.ndtri(0.5 + level / 2) == pytest.approx(c, abs=1e-6)
        assert stats.t.ppf(0.5 + level / 2, 10_000_000) == pytest.approx(c, abs=1e-5)


def test_wave_fractions():
    assert np.array_equal(wave_fractions([60] * 5), [0.2, 0.4, 0.6, 0.8, 1.0])
    assert wave_fractions([1, 2, 3]) == pytest.approx([1 / 6, 1 / 2, 1.0])
    assert wave_fractions(np.array([61, 60, 60, 60, 60]))[-1] == 1.0
    assert critical_values(wave_fractions([60] * 5)) == pytest.approx(
        critical_values(EQUAL5), abs=1e-12)


@pytest.mark.parametrize(("call", "match"), [
    (lambda: critical_values([]), "empty"),
    (lambda: critical_values([0.5, 0.5]), "strictly increasing: look 2 is at 0.5"),
    (lambda: critical_values([0.6, 0.4, 1.0]), "strictly increasing: look 2 is at 0.4"),
    (lambda: critical_values([0.0, 1.0]), r"\(0, 1\]: look 1 is at 0"),
    (lambda: critical_values([0.5, 1.2]), r"\(0, 1\]: look 2 is at 1.2"),
    (lambda: critical_values([math.nan]), "look 1 is at nan"),
    (lambda: critical_values([1.0], alpha=0.0), "alpha must be in"),
    (lambda: critical_values([1.0], alpha=1.0), "alpha must be in"),
    (lambda: critical_values([1.0], alpha=math.nan), "alpha must be in"),
    (lambda: critical_values([1.0], spending="haybittle"), "'haybittle'"),
    (lambda: critical_values([0.5, 0.500001, 1.0]), "looks 1 and 2 .* too close"),
    (lambda: spent_alpha(-0.1, 0.05), "fraction must be >= 0"),
    (lambda: spent_alpha(0.5, 0.05, "pococks"), "'pococks'"),
    (lambda: wave_fractions([]), "empty"),
    (lambda: wave_fractions([10, 0, 10]), "wave 2 has 0"),
    (lambda: wave_fractions([10, -5]), "wave 2 has -5"),
    (lambda: wave_fractions([10, 2.5]), "wave 2 has 2.5"),
    (lambda: look_level(-1.0), "critical value must be >= 0"),
    (lambda: look_level(math.nan), "critical value must be >= 0"),
    (lambda: decision(0.1, 1.0, 0.0), "target_width must be > 0"),
])
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_decision():
    assert decision(0.1, 2.0, None) == "excludes 0"
    assert decision(-2.0, -0.1, None) == "excludes 0"
    assert decision(0.1, 2.0, 5.0) == "excludes 0"  # a sign decides first
    assert decision(-1.0, 1.0, None) is None
    assert decision(0.0, 1.0, None) is None  # touching 0 does not exclude it
    assert decision(-1.0, 1.0, 2.5) == "narrower than target"
    assert decision(-1.0, 1.0, 2.0) == "narrower than target"  # at most the target
    assert decision(-1.0, 1.0, 1.9) is None
    assert decision(-math.inf, math.inf, 5.0) is None  # a look with c = inf
    assert decision(math.nan, 1.0, 5.0) is None
    assert decision(0.5, math.nan, None) is None
