"""Coverage and width of the leaderboard's 95% intervals with human labels
(judgebias.stats.ppi): judge-only, human-only (normal and Student t), PPI (lambda = 1),
PPI++ (tuned lambda, clipped to [0, 1] as ppi_py; normal and the small-sample t variant)
and PPI++ with the unclipped lambda, for one system's mean and for the paired difference
of two systems, from 5 to 200 labels.

Why: PPI++ is the leaderboard's answer to a biased judge (specs/leaderboard.md, "Human
labels"), and its intervals are CLT ones (as the papers and ppi_py give them). They are
valid only asymptotically; a user may bring 5 labels or 200, so this measures whether
they cover at those sizes, where they stop covering (the threshold of
judgebias.stats.ppi_power.few_labels), what the t variant (``interval="t"``) buys there, by how
much PPI++ beats the labels alone, and how badly the naive judge-only interval misses.

Worlds. N = 1,000 items; on each, two systems' true quality (the human label, on a 0-10
scale) is ``Y_s = mu_s + u_i + e_si`` with mu_a = 6, mu_b = 5.5, a shared item effect u and
an own error e (sd 1 each); the judge scores ``f_s = g_s(Y_s) + eps`` (judge noise sd
0.7). A random n of the items carry human labels. Judges:

* ``no_bias``: g(Y) = Y, everything should cover;
* ``additive``: g(Y) = Y + 1 on both systems (biased means, unbiased difference);
* ``self_pref``: g_a(Y) = Y + 1, g_b(Y) = Y (a judge preferring system a: the difference
  is biased by 1);
* ``compressed``: the same judge on a half-size scale, ``f = 0.5 (Y + eps) + 2.5`` (means
  biased by -0.5 and -0.25, the difference halved). The variance-minimising lambda is
  about 1.1 to 1.6 here (2 for a noiseless judge), so clipping it to 1 (ppi_py) gives
  PPI's width; the unclipped column shows what that costs.

Noise kinds (u, e and eps alike): ``normal``; ``skewed`` (centred exponential, sd 1 and
0.7); ``discrete`` (normal, with the judge's scores rounded to integers and clipped to
0..10); ``binary`` (normal, but the humans say pass or fail: the label is 1 where the
quality is above 5, a pass rate of 0.76 for a and 0.64 for b, and the judge still scores
the quality). Truth: mu_a for the mean, mu_a - mu_b = 0.5 for the difference (the pass
rates and their difference for ``binary``).

    .venv/bin/python benchmarks/ppi_coverage.py                       # 2,000 reps per cell
    .venv/bin/python benchmarks/ppi_coverage.py --reps 50 --ns 20 50  # smoke (CI)

Each cell: coverage (%) / mean width of the 95% interval (in label points; a leading 0
dropped); ``a`` is system a's mean, ``a-b`` the difference. The judge-only interval's
coverage does not depend on n and is given per world under each table. The Monte-Carlo
error of a coverage near 95% is +-1.0 point (95%, 2,000 reps).

What it shows. Judge-only covers 0% wherever the judge is biased (its width is that of
1,000 items: narrow around the wrong value), and covers only where the bias is absent or
cancels (``no_bias``; the difference under ``additive``), never for pass/fail labels (it
estimates the mean score, not the pass rate). From 100 labels on human-only, PPI and
PPI++ cover 93-96% of the time (92.9% in PPI++'s worst cell, the mean of a skewed
label), PPI++ at 0.5 to 0.75 of the human-only width from 50 labels on (0.77 to 0.88
with pass/fail labels, about which a quality score says less), and clearly narrower than
PPI for the difference of two systems (0.266 against 0.363 at n = 200): the judge is
noisier relative to the difference's signal, so its best lambda is below 1. With the
compressed judge the best lambda is above 1, and ppi_py's clipping makes a system's
interval 4-13% wider than the unclipped one from n = 50 on (1-4% with the discrete
judge, 0-2% for the difference).

Few labels (the last table: the lowest, the 10% quantile and the median coverage over
the 32 cells of each n, and the median width ratios). Below 40 labels PPI++'s normal
interval is materially short: median 78.8% at n = 5, 87.9% at 10, 91.6% at 20 and 92.8%
at 30, one cell in ten below 68.5, 84.6, 89.4 and 91.4%. At 40 the median is 93.6% (10%
quantile 92.1%) and more labels gain little (93.7% at 50, 94.5% at 100): what is left in
the worst cells (91-92% at 40-50: the mean of a skewed or a pass/fail label) shrinks
slowly and is the human-only interval's too. Hence judgebias.stats.ppi_power.FEW_LABELS = 40:
`few_labels` warns below it. The tuned lambda's share of the shortfall is the gap to
PPI's fixed lambda (median 5.9 points at 5 labels, 3.1 at 10, 1.3 at 20, 0.8 at 40: the
finite-sample price of estimating it, cf. Mani et al., arXiv 2505.20178). The t variant
(divisor n - 1 variances, Student t quantiles, Welch-Satterthwaite degrees of freedom)
helps where it is needed: PPI++ t's median is 91.8% at 5 labels, 92.8% at 10, 93.8% at
20 and 94.3% at 30, for intervals 1.57, 1.21, 1.09 and 1.06 times as wide (1.04 at 40,
1.01 from 100 on). Neither it nor the classical Student t interval of the labels alone
(93.5-96.7% with normal labels at every n) cures pass/fail labels at 5 (71.8-82.5%:
all five labels alike a quarter of the time, an interval of width zero), so the warning
stays with either; judgebias.stats.ppi offers ``interval="t"`` and keeps the papers' and
ppi_py's normal interval as the default.

Measured (2,000 reps, seed 0, 863 s on one core of a shared 2-core machine)::

    .venv/bin/python benchmarks/ppi_coverage.py

normal noise:

| world | n | estimand | human-only | human-only t | PPI | PPI++ | PPI++ t | PPI++ unclipped |
|---|---|---|---|---|---|---|---|---|
| no_bias | 5 | a | 83.8/2.07 | 93.5/3.28 | 85.4/1.05 | 78.8/1.07 | 90.6/1.67 | 79.5/1.30 |
| no_bias | 5 | a-b | 84.4/2.09 | 95.3/3.31 | 85.7/1.48 | 79.8/1.28 | 92.0/2.01 | 80.2/1.44 |
| no_bias | 10 | a | 90.6/1.62 | 94.7/1.97 | 90.1/.821 | 87.2/.808 | 92.5/.974 | 87.9/.912 |
| no_bias | 10 | a-b | 89.6/1.62 | 94.8/1.97 | 90.8/1.16 | 87.7/1.01 | 93.4/1.22 | 87.9/1.06 |
| no_bias | 20 | a | 92.8/1.20 | 95.0/1.31 | 93.8/.621 | 92.6/.587 | 95.0/.637 | 92.6/.617 |
| no_bias | 20 | a-b | 93.8/1.19 | 95.8/1.31 | 92.9/.860 | 92.6/.727 | 94.5/.792 | 92.8/.738 |
| no_bias | 30 | a | 94.3/.982 | 95.7/1.04 | 93.7/.525 | 92.5/.486 | 93.3/.511 | 92.7/.499 |
| no_bias | 30 | a-b | 93.3/.982 | 94.5/1.04 | 93.7/.722 | 93.0/.600 | 94.5/.633 | 93.2/.603 |
| no_bias | 40 | a | 93.8/.860 | 95.0/.899 | 94.2/.470 | 93.3/.431 | 94.0/.446 | 93.2/.436 |
| no_bias | 40 | a-b | 93.5/.862 | 94.8/.901 | 94.7/.639 | 93.0/.528 | 94.1/.549 | 93.1/.529 |
| no_bias | 50 | a | 93.5/.772 | 94.3/.800 | 94.5/.432 | 93.5/.390 | 94.0/.400 | 93.6/.393 |
| no_bias | 50 | a-b | 93.8/.767 | 94.7/.795 | 94.3/.584 | 94.2/.473 | 95.2/.488 | 94.2/.473 |
| no_bias | 100 | a | 95.4/.552 | 95.5/.561 | 95.2/.342 | 94.2/.295 | 94.4/.298 | 94.2/.295 |
| no_bias | 100 | a-b | 95.4/.550 | 95.9/.560 | 95.0/.447 | 94.6/.350 | 95.0/.355 | 94.6/.350 |
| no_bias | 200 | a | 94.9/.391 | 95.1/.394 | 95.6/.292 | 95.2/.235 | 95.2/.236 | 95.2/.235 |
| no_bias | 200 | a-b | 95.5/.391 | 95.7/.394 | 94.8/.363 | 95.0/.266 | 95.2/.268 | 95.0/.266 |
| additive | 5 | a | 84.2/2.08 | 95.2/3.29 | 85.4/1.06 | 78.2/1.05 | 92.4/1.65 | 79.3/1.28 |
| additive | 5 | a-b | 84.8/2.06 | 95.2/3.26 | 84.7/1.48 | 78.5/1.26 | 91.8/1.98 | 79.0/1.41 |
| additive | 10 | a | 90.2/1.63 | 94.7/1.98 | 91.8/.825 | 88.0/.804 | 93.0/.968 | 88.6/.905 |
| additive | 10 | a-b | 90.0/1.64 | 94.8/1.99 | 91.2/1.15 | 88.1/.992 | 93.1/1.20 | 88.2/1.06 |
| additive | 20 | a | 93.2/1.19 | 94.8/1.31 | 92.9/.620 | 91.6/.588 | 93.9/.638 | 91.9/.619 |
| additive | 20 | a-b | 93.0/1.20 | 95.0/1.31 | 92.7/.863 | 92.7/.732 | 94.2/.797 | 92.7/.744 |
| additive | 30 | a | 95.0/.990 | 95.9/1.05 | 93.5/.528 | 92.7/.492 | 93.9/.518 | 92.8/.506 |
| additive | 30 | a-b | 93.2/.988 | 94.8/1.05 | 94.2/.724 | 92.8/.606 | 94.3/.640 | 92.8/.611 |
| additive | 40 | a | 94.0/.860 | 95.2/.899 | 94.8/.468 | 94.7/.427 | 95.5/.443 | 94.8/.434 |
| additive | 40 | a-b | 95.2/.860 | 95.9/.899 | 94.1/.640 | 94.7/.527 | 95.6/.548 | 94.7/.528 |
| additive | 50 | a | 94.0/.772 | 94.7/.800 | 94.7/.432 | 93.4/.390 | 94.1/.400 | 93.5/.393 |
| additive | 50 | a-b | 94.4/.774 | 95.2/.802 | 94.8/.583 | 93.5/.474 | 94.4/.489 | 93.5/.474 |
| additive | 100 | a | 94.8/.549 | 95.1/.559 | 94.3/.342 | 93.6/.295 | 93.8/.298 | 93.6/.295 |
| additive | 100 | a-b | 96.4/.551 | 96.7/.561 | 94.2/.446 | 94.2/.350 | 94.8/.355 | 94.2/.350 |
| additive | 200 | a | 95.2/.392 | 95.5/.395 | 94.8/.292 | 95.2/.235 | 95.3/.236 | 95.2/.235 |
| additive | 200 | a-b | 95.2/.391 | 95.4/.395 | 94.5/.364 | 95.2/.267 | 95.3/.268 | 95.2/.267 |
| self_pref | 5 | a | 84.9/2.09 | 95.0/3.32 | 84.5/1.04 | 79.0/1.06 | 92.5/1.66 | 79.8/1.32 |
| self_pref | 5 | a-b | 84.8/2.09 | 94.5/3.30 | 85.2/1.48 | 80.2/1.29 | 91.7/2.02 | 80.8/1.45 |
| self_pref | 10 | a | 91.2/1.62 | 95.5/1.97 | 90.5/.831 | 88.1/.814 | 93.3/.980 | 88.8/.919 |
| self_pref | 10 | a-b | 90.8/1.63 | 95.5/1.98 | 90.8/1.16 | 88.3/1.000 | 93.5/1.21 | 88.4/1.06 |
| self_pref | 20 | a | 92.2/1.19 | 94.5/1.30 | 92.0/.620 | 91.2/.590 | 93.5/.640 | 91.3/.620 |
| self_pref | 20 | a-b | 92.5/1.18 | 95.0/1.30 | 92.4/.862 | 92.5/.728 | 94.1/.794 | 92.5/.743 |
| self_pref | 30 | a | 94.0/.989 | 95.4/1.05 | 94.7/.528 | 93.7/.491 | 95.2/.516 | 93.8/.503 |
| self_pref | 30 | a-b | 93.9/.988 | 95.3/1.05 | 94.5/.725 | 94.8/.605 | 95.9/.639 | 94.8/.608 |
| self_pref | 40 | a | 93.5/.861 | 94.5/.900 | 94.3/.471 | 93.6/.432 | 94.5/.447 | 93.8/.438 |
| self_pref | 40 | a-b | 94.5/.861 | 95.5/.900 | 94.1/.641 | 93.0/.528 | 94.2/.549 | 93.0/.529 |
| self_pref | 50 | a | 94.2/.771 | 95.0/.798 | 94.2/.432 | 94.2/.389 | 94.8/.400 | 94.3/.392 |
| self_pref | 50 | a-b | 94.2/.770 | 94.8/.798 | 94.1/.582 | 93.2/.472 | 94.0/.486 | 93.2/.472 |
| self_pref | 100 | a | 94.3/.551 | 95.0/.560 | 95.8/.342 | 95.3/.294 | 95.7/.297 | 95.3/.294 |
| self_pref | 100 | a-b | 94.6/.549 | 94.9/.559 | 95.3/.447 | 95.0/.349 | 95.1/.354 | 95.0/.349 |
| self_pref | 200 | a | 94.5/.391 | 94.6/.395 | 94.8/.292 | 95.0/.234 | 95.2/.235 | 95.0/.234 |
| self_pref | 200 | a-b | 94.5/.391 | 94.5/.394 | 95.5/.363 | 94.7/.266 | 94.8/.268 | 94.7/.266 |
| compressed | 5 | a | 86.4/2.09 | 95.5/3.32 | 86.1/1.18 | 83.5/1.24 | 94.1/1.95 | 81.2/1.31 |
| compressed | 5 | a-b | 83.9/2.10 | 94.2/3.32 | 84.2/1.28 | 79.7/1.32 | 91.8/2.08 | 78.8/1.45 |
| compressed | 10 | a | 89.1/1.61 | 94.2/1.96 | 90.6/.906 | 89.5/.931 | 94.2/1.13 | 89.0/.909 |
| compressed | 10 | a-b | 89.8/1.61 | 95.0/1.96 | 91.0/.986 | 89.1/1.01 | 94.3/1.22 | 88.9/1.04 |
| compressed | 20 | a | 92.4/1.19 | 94.7/1.30 | 92.5/.672 | 92.2/.678 | 94.2/.741 | 91.6/.622 |
| compressed | 20 | a-b | 93.3/1.20 | 95.2/1.31 | 93.5/.736 | 93.5/.744 | 95.0/.813 | 92.8/.745 |
| compressed | 30 | a | 94.2/.986 | 95.0/1.05 | 94.0/.560 | 93.9/.563 | 95.2/.595 | 93.7/.508 |
| compressed | 30 | a-b | 93.3/.988 | 94.5/1.05 | 93.0/.612 | 92.9/.616 | 94.3/.652 | 92.7/.607 |
| compressed | 40 | a | 94.0/.860 | 95.2/.898 | 94.2/.490 | 94.2/.491 | 95.0/.512 | 93.8/.437 |
| compressed | 40 | a-b | 93.1/.860 | 94.5/.899 | 94.5/.537 | 94.2/.539 | 95.0/.562 | 93.5/.527 |
| compressed | 50 | a | 94.1/.774 | 94.8/.802 | 93.8/.442 | 93.8/.443 | 94.5/.457 | 93.5/.393 |
| compressed | 50 | a-b | 94.1/.772 | 94.6/.799 | 94.3/.483 | 94.3/.485 | 95.0/.501 | 93.7/.474 |
| compressed | 100 | a | 94.5/.549 | 94.7/.559 | 94.5/.323 | 94.5/.323 | 95.0/.328 | 94.5/.294 |
| compressed | 100 | a-b | 94.2/.550 | 94.7/.559 | 94.5/.354 | 94.5/.355 | 94.8/.360 | 94.7/.349 |
| compressed | 200 | a | 95.5/.391 | 95.8/.394 | 95.2/.244 | 95.2/.244 | 95.4/.246 | 95.2/.235 |
| compressed | 200 | a-b | 94.3/.390 | 94.5/.394 | 94.8/.267 | 94.7/.267 | 94.8/.268 | 94.8/.266 |

judge-only coverage (normal; a / a-b, every n):
no_bias 94.8/94.9, additive 0.0/95.1, self_pref 0.0/0.0, compressed 0.0/0.0

skewed noise:

| world | n | estimand | human-only | human-only t | PPI | PPI++ | PPI++ t | PPI++ unclipped |
|---|---|---|---|---|---|---|---|---|
| no_bias | 5 | a | 80.7/2.00 | 91.2/3.16 | 80.2/.960 | 75.1/1.000 | 87.7/1.56 | 77.4/1.56 |
| no_bias | 5 | a-b | 84.8/1.99 | 97.0/3.15 | 86.6/1.42 | 81.8/1.19 | 95.0/1.87 | 82.2/1.56 |
| no_bias | 10 | a | 87.4/1.56 | 91.8/1.90 | 87.4/.792 | 83.0/.776 | 87.6/.935 | 84.2/1.02 |
| no_bias | 10 | a-b | 91.2/1.57 | 96.2/1.91 | 91.6/1.12 | 89.6/.958 | 94.2/1.16 | 89.9/1.11 |
| no_bias | 20 | a | 91.7/1.17 | 93.8/1.29 | 89.5/.602 | 87.9/.577 | 90.1/.626 | 88.4/.663 |
| no_bias | 20 | a-b | 92.8/1.18 | 95.8/1.29 | 92.7/.839 | 91.5/.716 | 93.5/.780 | 91.7/.761 |
| no_bias | 30 | a | 91.8/.974 | 93.1/1.03 | 91.6/.523 | 89.6/.489 | 91.0/.515 | 90.2/.542 |
| no_bias | 30 | a-b | 94.2/.978 | 95.5/1.04 | 94.2/.719 | 93.3/.602 | 94.8/.636 | 93.5/.628 |
| no_bias | 40 | a | 92.7/.852 | 93.5/.890 | 93.1/.462 | 91.6/.427 | 92.6/.443 | 91.7/.459 |
| no_bias | 40 | a-b | 92.9/.850 | 94.2/.888 | 94.0/.636 | 93.8/.524 | 94.5/.545 | 93.8/.534 |
| no_bias | 50 | a | 93.8/.767 | 94.5/.794 | 94.5/.429 | 92.8/.392 | 93.4/.403 | 92.8/.413 |
| no_bias | 50 | a-b | 93.8/.762 | 94.7/.789 | 95.3/.581 | 94.7/.474 | 95.4/.489 | 94.8/.479 |
| no_bias | 100 | a | 93.9/.550 | 94.3/.559 | 94.4/.341 | 94.0/.297 | 94.2/.300 | 94.0/.299 |
| no_bias | 100 | a-b | 94.5/.551 | 95.1/.560 | 95.3/.446 | 95.4/.351 | 95.9/.355 | 95.4/.351 |
| no_bias | 200 | a | 95.2/.390 | 95.3/.393 | 94.8/.292 | 94.3/.235 | 94.5/.236 | 94.3/.235 |
| no_bias | 200 | a-b | 94.8/.390 | 95.1/.393 | 95.5/.363 | 94.3/.266 | 94.3/.267 | 94.3/.266 |
| additive | 5 | a | 81.2/2.00 | 91.2/3.17 | 81.3/.978 | 74.1/1.00 | 85.2/1.57 | 76.8/1.53 |
| additive | 5 | a-b | 85.5/1.96 | 96.2/3.11 | 87.4/1.39 | 81.5/1.17 | 94.1/1.84 | 82.3/1.52 |
| additive | 10 | a | 88.2/1.59 | 92.5/1.94 | 87.2/.792 | 84.1/.787 | 88.8/.947 | 85.7/1.03 |
| additive | 10 | a-b | 90.3/1.58 | 94.8/1.92 | 91.4/1.12 | 88.6/.953 | 94.0/1.15 | 89.2/1.15 |
| additive | 20 | a | 91.8/1.17 | 93.7/1.28 | 91.5/.612 | 89.6/.587 | 91.6/.637 | 89.8/.673 |
| additive | 20 | a-b | 94.0/1.18 | 96.0/1.29 | 94.4/.854 | 92.1/.724 | 94.5/.789 | 92.2/.774 |
| additive | 30 | a | 92.7/.974 | 93.9/1.03 | 92.2/.512 | 90.5/.483 | 91.8/.508 | 90.8/.530 |
| additive | 30 | a-b | 92.5/.973 | 94.2/1.03 | 94.2/.713 | 92.5/.598 | 94.7/.632 | 92.5/.618 |
| additive | 40 | a | 92.3/.852 | 93.5/.890 | 94.7/.467 | 92.0/.431 | 93.1/.446 | 92.2/.457 |
| additive | 40 | a-b | 95.6/.855 | 96.2/.894 | 94.8/.638 | 94.5/.528 | 95.4/.549 | 94.5/.541 |
| additive | 50 | a | 93.7/.766 | 94.3/.793 | 94.5/.429 | 93.2/.391 | 94.0/.402 | 93.2/.408 |
| additive | 50 | a-b | 93.8/.764 | 94.6/.792 | 94.1/.583 | 94.5/.478 | 95.0/.493 | 94.6/.483 |
| additive | 100 | a | 94.2/.549 | 94.6/.558 | 94.4/.340 | 93.8/.296 | 93.9/.299 | 93.7/.298 |
| additive | 100 | a-b | 94.9/.548 | 95.2/.558 | 95.2/.446 | 94.7/.350 | 95.1/.355 | 94.7/.350 |
| additive | 200 | a | 95.5/.390 | 95.8/.394 | 94.7/.291 | 94.0/.235 | 94.2/.236 | 94.0/.235 |
| additive | 200 | a-b | 94.8/.389 | 94.8/.392 | 94.2/.363 | 94.5/.265 | 94.5/.267 | 94.5/.265 |
| self_pref | 5 | a | 80.8/1.96 | 90.9/3.10 | 79.4/.973 | 74.5/.999 | 87.1/1.56 | 76.8/1.45 |
| self_pref | 5 | a-b | 85.1/1.93 | 96.6/3.06 | 86.4/1.42 | 81.2/1.19 | 94.2/1.87 | 81.6/1.48 |
| self_pref | 10 | a | 87.8/1.56 | 92.2/1.90 | 87.5/.786 | 84.5/.782 | 89.2/.942 | 85.5/1.01 |
| self_pref | 10 | a-b | 91.5/1.57 | 96.0/1.91 | 91.1/1.12 | 89.5/.954 | 94.7/1.15 | 89.8/1.14 |
| self_pref | 20 | a | 92.2/1.18 | 94.4/1.29 | 91.3/.605 | 89.4/.581 | 91.6/.631 | 89.5/.678 |
| self_pref | 20 | a-b | 93.3/1.18 | 95.5/1.29 | 93.3/.845 | 92.1/.716 | 94.2/.780 | 92.2/.772 |
| self_pref | 30 | a | 91.3/.983 | 93.0/1.04 | 92.9/.515 | 90.8/.485 | 91.8/.510 | 91.0/.543 |
| self_pref | 30 | a-b | 94.2/.980 | 95.7/1.04 | 95.0/.713 | 92.8/.595 | 94.5/.628 | 92.9/.625 |
| self_pref | 40 | a | 92.3/.854 | 93.8/.892 | 93.5/.466 | 92.2/.432 | 93.2/.448 | 92.0/.461 |
| self_pref | 40 | a-b | 95.0/.852 | 95.9/.890 | 94.4/.637 | 94.0/.527 | 94.9/.548 | 94.0/.537 |
| self_pref | 50 | a | 94.8/.765 | 95.5/.792 | 94.3/.430 | 93.5/.391 | 93.8/.402 | 93.3/.408 |
| self_pref | 50 | a-b | 94.5/.763 | 95.7/.791 | 94.3/.581 | 94.6/.474 | 95.7/.489 | 94.6/.478 |
| self_pref | 100 | a | 94.4/.546 | 94.5/.555 | 94.5/.340 | 92.9/.295 | 93.2/.299 | 93.0/.297 |
| self_pref | 100 | a-b | 95.2/.547 | 95.5/.556 | 95.1/.445 | 94.8/.349 | 95.2/.353 | 94.8/.349 |
| self_pref | 200 | a | 94.8/.389 | 95.0/.392 | 95.0/.292 | 93.7/.235 | 93.9/.236 | 93.7/.235 |
| self_pref | 200 | a-b | 94.6/.390 | 94.8/.393 | 94.9/.363 | 94.5/.266 | 94.6/.268 | 94.5/.266 |
| compressed | 5 | a | 81.3/1.99 | 91.8/3.15 | 83.0/1.11 | 78.7/1.19 | 89.8/1.88 | 76.7/1.50 |
| compressed | 5 | a-b | 85.5/1.96 | 96.5/3.11 | 84.9/1.23 | 81.5/1.26 | 94.0/2.00 | 81.2/1.55 |
| compressed | 10 | a | 87.3/1.57 | 91.9/1.91 | 89.2/.887 | 85.8/.924 | 91.8/1.12 | 83.9/1.07 |
| compressed | 10 | a-b | 91.9/1.57 | 95.6/1.92 | 91.3/.981 | 90.1/1.00 | 94.8/1.22 | 89.5/1.14 |
| compressed | 20 | a | 91.2/1.17 | 93.5/1.29 | 92.0/.665 | 90.8/.679 | 93.0/.742 | 88.8/.692 |
| compressed | 20 | a-b | 93.5/1.17 | 95.7/1.28 | 94.1/.728 | 93.7/.741 | 95.7/.809 | 92.7/.770 |
| compressed | 30 | a | 92.8/.983 | 93.8/1.04 | 92.9/.556 | 92.0/.562 | 93.4/.595 | 91.0/.539 |
| compressed | 30 | a-b | 93.2/.978 | 95.0/1.04 | 93.5/.607 | 93.2/.614 | 94.7/.650 | 93.3/.625 |
| compressed | 40 | a | 93.7/.849 | 94.7/.887 | 93.1/.486 | 92.6/.489 | 93.7/.510 | 91.6/.460 |
| compressed | 40 | a-b | 94.2/.852 | 94.9/.891 | 94.8/.534 | 94.2/.539 | 95.2/.562 | 93.9/.537 |
| compressed | 50 | a | 92.4/.762 | 93.4/.789 | 93.7/.439 | 93.0/.442 | 93.8/.456 | 90.1/.409 |
| compressed | 50 | a-b | 94.2/.769 | 95.0/.796 | 94.5/.483 | 94.2/.486 | 95.0/.502 | 93.5/.482 |
| compressed | 100 | a | 94.0/.546 | 94.5/.555 | 94.7/.323 | 94.5/.323 | 94.8/.328 | 93.8/.299 |
| compressed | 100 | a-b | 95.1/.545 | 95.9/.555 | 94.7/.353 | 94.4/.355 | 95.0/.360 | 94.8/.350 |
| compressed | 200 | a | 94.9/.390 | 95.1/.394 | 94.2/.244 | 94.0/.244 | 94.2/.246 | 94.0/.235 |
| compressed | 200 | a-b | 95.9/.390 | 96.0/.394 | 94.1/.267 | 94.0/.267 | 94.4/.269 | 94.0/.266 |

judge-only coverage (skewed; a / a-b, every n):
no_bias 94.8/94.8, additive 0.0/95.0, self_pref 0.0/0.0, compressed 0.0/0.0

discrete noise:

| world | n | estimand | human-only | human-only t | PPI | PPI++ | PPI++ t | PPI++ unclipped |
|---|---|---|---|---|---|---|---|---|
| no_bias | 5 | a | 83.8/2.08 | 94.7/3.30 | 85.4/1.13 | 79.2/1.10 | 91.1/1.73 | 79.8/1.31 |
| no_bias | 5 | a-b | 84.5/2.07 | 95.0/3.28 | 85.4/1.60 | 79.8/1.33 | 92.2/2.10 | 80.5/1.49 |
| no_bias | 10 | a | 89.8/1.61 | 94.8/1.96 | 90.8/.892 | 87.1/.850 | 92.8/1.03 | 87.5/.937 |
| no_bias | 10 | a-b | 89.5/1.61 | 94.8/1.96 | 91.6/1.25 | 87.9/1.04 | 93.2/1.26 | 88.0/1.08 |
| no_bias | 20 | a | 93.2/1.20 | 95.2/1.31 | 93.2/.670 | 92.3/.622 | 94.0/.675 | 92.6/.647 |
| no_bias | 20 | a-b | 92.6/1.19 | 95.0/1.31 | 92.8/.935 | 91.0/.765 | 93.3/.834 | 91.1/.772 |
| no_bias | 30 | a | 93.7/.983 | 94.7/1.04 | 94.0/.565 | 92.5/.514 | 94.0/.542 | 92.6/.525 |
| no_bias | 30 | a-b | 93.8/.989 | 94.5/1.05 | 94.1/.781 | 93.0/.632 | 94.7/.667 | 93.1/.634 |
| no_bias | 40 | a | 93.3/.864 | 94.7/.903 | 94.8/.501 | 94.2/.452 | 95.0/.469 | 94.2/.457 |
| no_bias | 40 | a-b | 93.7/.862 | 94.5/.900 | 93.8/.687 | 94.0/.550 | 94.8/.573 | 94.0/.551 |
| no_bias | 50 | a | 94.8/.769 | 95.3/.797 | 94.5/.461 | 93.2/.409 | 94.0/.420 | 93.2/.411 |
| no_bias | 50 | a-b | 94.0/.771 | 94.8/.799 | 94.5/.625 | 94.1/.494 | 94.8/.509 | 94.0/.494 |
| no_bias | 100 | a | 94.2/.551 | 94.5/.560 | 95.3/.361 | 94.8/.306 | 95.2/.310 | 94.8/.306 |
| no_bias | 100 | a-b | 94.7/.551 | 95.0/.560 | 94.8/.476 | 94.3/.363 | 94.7/.368 | 94.3/.363 |
| no_bias | 200 | a | 94.6/.390 | 94.8/.393 | 94.2/.304 | 93.7/.241 | 93.8/.242 | 93.7/.241 |
| no_bias | 200 | a-b | 94.6/.391 | 94.8/.394 | 95.2/.384 | 94.2/.274 | 94.5/.276 | 94.2/.274 |
| additive | 5 | a | 84.5/2.10 | 94.8/3.32 | 86.6/1.12 | 79.8/1.10 | 92.0/1.73 | 81.0/1.30 |
| additive | 5 | a-b | 84.3/2.08 | 95.1/3.29 | 84.5/1.58 | 78.8/1.31 | 92.0/2.07 | 79.3/1.46 |
| additive | 10 | a | 90.6/1.61 | 95.4/1.96 | 91.2/.885 | 87.5/.846 | 92.5/1.02 | 88.1/.930 |
| additive | 10 | a-b | 90.5/1.60 | 94.8/1.95 | 91.8/1.24 | 88.6/1.04 | 92.8/1.26 | 88.8/1.08 |
| additive | 20 | a | 93.4/1.19 | 95.5/1.31 | 93.2/.664 | 91.9/.619 | 93.7/.673 | 92.0/.641 |
| additive | 20 | a-b | 93.0/1.19 | 95.0/1.30 | 92.6/.920 | 91.1/.761 | 93.6/.830 | 91.1/.771 |
| additive | 30 | a | 94.3/.983 | 95.2/1.04 | 94.5/.560 | 94.0/.516 | 95.2/.543 | 94.0/.524 |
| additive | 30 | a-b | 93.4/.983 | 94.9/1.04 | 94.0/.775 | 93.1/.631 | 95.0/.667 | 93.1/.633 |
| additive | 40 | a | 94.2/.860 | 95.0/.899 | 94.4/.498 | 92.3/.452 | 93.4/.469 | 92.4/.457 |
| additive | 40 | a-b | 94.5/.859 | 95.5/.898 | 94.1/.683 | 93.3/.552 | 94.1/.574 | 93.3/.552 |
| additive | 50 | a | 93.7/.771 | 94.8/.799 | 94.5/.456 | 94.5/.409 | 94.9/.421 | 94.5/.411 |
| additive | 50 | a-b | 94.0/.771 | 94.9/.799 | 94.5/.622 | 94.0/.497 | 94.8/.513 | 94.0/.497 |
| additive | 100 | a | 93.0/.551 | 93.5/.561 | 95.4/.357 | 94.6/.308 | 95.0/.311 | 94.6/.308 |
| additive | 100 | a-b | 95.0/.551 | 95.4/.561 | 95.5/.472 | 94.9/.364 | 95.2/.369 | 94.9/.364 |
| additive | 200 | a | 94.2/.391 | 94.5/.394 | 95.3/.300 | 95.5/.242 | 95.5/.244 | 95.5/.242 |
| additive | 200 | a-b | 94.8/.390 | 94.8/.394 | 94.2/.380 | 94.0/.275 | 94.2/.277 | 94.0/.275 |
| self_pref | 5 | a | 85.0/2.10 | 96.0/3.32 | 85.0/1.13 | 79.2/1.10 | 92.5/1.73 | 80.2/1.31 |
| self_pref | 5 | a-b | 84.8/2.09 | 94.9/3.31 | 85.4/1.59 | 80.8/1.35 | 92.9/2.12 | 81.3/1.48 |
| self_pref | 10 | a | 91.0/1.61 | 95.0/1.96 | 91.0/.882 | 88.3/.841 | 92.8/1.01 | 88.8/.910 |
| self_pref | 10 | a-b | 90.1/1.62 | 94.9/1.97 | 90.3/1.24 | 88.6/1.04 | 92.8/1.26 | 88.8/1.09 |
| self_pref | 20 | a | 92.0/1.19 | 94.2/1.31 | 93.6/.661 | 91.6/.616 | 93.8/.669 | 92.0/.640 |
| self_pref | 20 | a-b | 91.4/1.19 | 94.2/1.30 | 93.0/.928 | 92.0/.764 | 93.8/.833 | 92.0/.773 |
| self_pref | 30 | a | 93.5/.986 | 95.1/1.05 | 95.1/.561 | 93.0/.516 | 94.2/.543 | 93.0/.527 |
| self_pref | 30 | a-b | 93.0/.992 | 94.8/1.05 | 94.8/.776 | 92.8/.633 | 94.0/.669 | 92.8/.635 |
| self_pref | 40 | a | 94.3/.861 | 95.5/.899 | 94.7/.500 | 93.8/.453 | 94.6/.470 | 93.8/.457 |
| self_pref | 40 | a-b | 94.8/.861 | 95.8/.900 | 93.9/.687 | 93.6/.552 | 94.5/.574 | 93.7/.553 |
| self_pref | 50 | a | 94.5/.772 | 95.5/.800 | 94.0/.455 | 93.8/.410 | 94.3/.421 | 93.8/.412 |
| self_pref | 50 | a-b | 95.0/.774 | 95.8/.801 | 93.7/.623 | 93.8/.497 | 94.2/.513 | 93.8/.498 |
| self_pref | 100 | a | 95.7/.551 | 96.1/.560 | 94.5/.357 | 94.7/.308 | 94.9/.311 | 94.7/.308 |
| self_pref | 100 | a-b | 94.7/.549 | 95.1/.559 | 95.2/.474 | 94.7/.364 | 95.0/.369 | 94.7/.364 |
| self_pref | 200 | a | 95.0/.391 | 95.1/.394 | 95.5/.300 | 95.5/.243 | 95.6/.244 | 95.5/.243 |
| self_pref | 200 | a-b | 94.7/.390 | 94.7/.394 | 95.0/.382 | 94.5/.275 | 94.6/.277 | 94.5/.275 |
| compressed | 5 | a | 85.1/2.10 | 94.8/3.32 | 84.5/1.24 | 80.9/1.29 | 92.3/2.03 | 80.8/1.46 |
| compressed | 5 | a-b | 84.8/2.09 | 94.9/3.31 | 83.8/1.43 | 78.8/1.41 | 92.3/2.23 | 79.5/1.59 |
| compressed | 10 | a | 89.2/1.61 | 94.0/1.96 | 90.2/.964 | 88.1/.986 | 94.3/1.20 | 87.5/1.01 |
| compressed | 10 | a-b | 90.2/1.61 | 94.6/1.96 | 90.5/1.11 | 88.0/1.11 | 93.0/1.35 | 87.5/1.15 |
| compressed | 20 | a | 93.0/1.19 | 95.3/1.31 | 93.7/.718 | 93.3/.726 | 95.5/.793 | 93.1/.714 |
| compressed | 20 | a-b | 92.2/1.19 | 94.3/1.31 | 94.0/.816 | 92.7/.822 | 95.1/.898 | 92.3/.840 |
| compressed | 30 | a | 94.0/.983 | 95.9/1.04 | 93.9/.595 | 93.9/.599 | 95.1/.634 | 93.3/.578 |
| compressed | 30 | a-b | 94.3/.989 | 95.5/1.05 | 93.5/.676 | 93.3/.680 | 94.8/.720 | 93.7/.688 |
| compressed | 40 | a | 94.5/.856 | 95.5/.895 | 94.0/.520 | 94.0/.523 | 94.9/.545 | 94.2/.503 |
| compressed | 40 | a-b | 93.9/.861 | 95.0/.900 | 94.0/.593 | 93.8/.596 | 94.7/.621 | 93.2/.600 |
| compressed | 50 | a | 93.8/.772 | 94.7/.799 | 94.5/.473 | 94.5/.474 | 95.5/.490 | 94.5/.455 |
| compressed | 50 | a-b | 93.5/.773 | 94.2/.801 | 93.8/.535 | 93.9/.537 | 94.7/.555 | 93.8/.540 |
| compressed | 100 | a | 94.2/.551 | 94.5/.560 | 93.7/.346 | 93.6/.346 | 94.0/.351 | 93.7/.335 |
| compressed | 100 | a-b | 95.5/.552 | 95.9/.561 | 95.0/.393 | 94.8/.393 | 95.0/.399 | 94.6/.394 |
| compressed | 200 | a | 94.9/.391 | 95.1/.394 | 94.7/.260 | 94.6/.260 | 94.8/.262 | 94.5/.258 |
| compressed | 200 | a-b | 95.5/.390 | 95.8/.394 | 95.2/.295 | 94.8/.293 | 94.9/.295 | 94.8/.293 |

judge-only coverage (discrete; a / a-b, every n):
no_bias 95.1/95.2, additive 0.0/94.7, self_pref 0.0/0.0, compressed 0.0/0.0

binary noise:

| world | n | estimand | human-only | human-only t | PPI | PPI++ | PPI++ t | PPI++ unclipped |
|---|---|---|---|---|---|---|---|---|
| no_bias | 5 | a | 73.6/.578 | 73.6/.915 | 85.4/1.99 | 68.2/.441 | 73.4/.696 | 68.2/.441 |
| no_bias | 5 | a-b | 75.2/.744 | 82.0/1.18 | 83.7/2.24 | 69.4/.618 | 79.8/.976 | 68.8/.615 |
| no_bias | 10 | a | 91.2/.474 | 92.6/.577 | 90.0/1.53 | 86.7/.364 | 89.6/.442 | 86.7/.364 |
| no_bias | 10 | a-b | 87.8/.605 | 91.1/.736 | 89.4/1.74 | 84.0/.509 | 90.2/.618 | 84.0/.509 |
| no_bias | 20 | a | 87.2/.359 | 95.8/.393 | 92.6/1.14 | 89.1/.277 | 91.3/.302 | 89.1/.277 |
| no_bias | 20 | a-b | 92.5/.450 | 96.0/.493 | 93.7/1.29 | 91.5/.382 | 94.0/.418 | 91.5/.382 |
| no_bias | 30 | a | 92.8/.298 | 92.8/.316 | 93.8/.951 | 91.5/.230 | 92.8/.244 | 91.5/.230 |
| no_bias | 30 | a-b | 94.2/.375 | 94.8/.397 | 94.4/1.08 | 93.3/.319 | 95.0/.339 | 93.3/.319 |
| no_bias | 40 | a | 91.6/.260 | 91.6/.272 | 94.2/.838 | 91.8/.201 | 93.2/.209 | 91.8/.201 |
| no_bias | 40 | a-b | 94.6/.325 | 95.5/.340 | 94.2/.948 | 93.0/.278 | 93.8/.290 | 93.0/.278 |
| no_bias | 50 | a | 92.0/.233 | 92.0/.241 | 94.4/.758 | 93.0/.181 | 93.9/.187 | 93.0/.181 |
| no_bias | 50 | a-b | 94.7/.292 | 95.9/.303 | 94.0/.858 | 94.0/.250 | 94.8/.259 | 94.0/.250 |
| no_bias | 100 | a | 94.8/.166 | 94.8/.169 | 94.7/.558 | 94.6/.130 | 95.0/.132 | 94.6/.130 |
| no_bias | 100 | a-b | 94.7/.208 | 95.0/.212 | 95.0/.631 | 93.8/.180 | 94.0/.183 | 93.8/.180 |
| no_bias | 200 | a | 93.5/.118 | 93.5/.119 | 94.8/.430 | 94.9/.096 | 95.2/.096 | 94.9/.096 |
| no_bias | 200 | a-b | 95.2/.148 | 95.5/.149 | 94.8/.482 | 94.5/.130 | 94.9/.131 | 94.5/.130 |
| additive | 5 | a | 72.6/.574 | 72.6/.909 | 84.9/1.98 | 67.3/.436 | 72.1/.687 | 67.3/.436 |
| additive | 5 | a-b | 72.9/.750 | 82.2/1.19 | 83.8/2.26 | 68.5/.618 | 79.5/.976 | 67.5/.616 |
| additive | 10 | a | 90.8/.471 | 92.5/.573 | 89.5/1.55 | 87.0/.363 | 90.1/.441 | 87.0/.363 |
| additive | 10 | a-b | 89.5/.606 | 93.0/.737 | 91.3/1.73 | 86.1/.509 | 92.2/.618 | 86.1/.509 |
| additive | 20 | a | 87.5/.359 | 95.5/.394 | 92.4/1.14 | 89.3/.276 | 91.6/.301 | 89.3/.276 |
| additive | 20 | a-b | 92.6/.453 | 96.2/.497 | 92.7/1.29 | 90.7/.384 | 93.4/.420 | 90.7/.384 |
| additive | 30 | a | 93.5/.299 | 93.5/.317 | 93.5/.955 | 91.9/.230 | 93.2/.244 | 91.9/.230 |
| additive | 30 | a-b | 93.5/.372 | 93.9/.395 | 93.0/1.08 | 92.7/.317 | 94.3/.336 | 92.7/.317 |
| additive | 40 | a | 91.5/.260 | 91.5/.272 | 93.2/.840 | 91.2/.201 | 92.8/.209 | 91.2/.201 |
| additive | 40 | a-b | 94.0/.325 | 95.3/.340 | 93.8/.951 | 93.5/.277 | 94.5/.290 | 93.5/.277 |
| additive | 50 | a | 92.7/.234 | 92.7/.242 | 94.4/.758 | 93.3/.181 | 94.4/.187 | 93.3/.181 |
| additive | 50 | a-b | 93.5/.292 | 94.8/.302 | 93.3/.855 | 93.0/.250 | 94.2/.259 | 93.0/.250 |
| additive | 100 | a | 94.5/.166 | 94.5/.169 | 95.2/.561 | 93.2/.131 | 93.7/.133 | 93.2/.131 |
| additive | 100 | a-b | 94.5/.208 | 94.8/.211 | 94.4/.630 | 94.0/.180 | 94.4/.183 | 94.0/.180 |
| additive | 200 | a | 94.0/.118 | 94.0/.119 | 94.4/.430 | 94.2/.096 | 94.5/.097 | 94.2/.096 |
| additive | 200 | a-b | 95.0/.148 | 95.1/.149 | 94.8/.482 | 94.2/.130 | 94.5/.131 | 94.2/.130 |
| self_pref | 5 | a | 72.7/.573 | 72.7/.907 | 84.2/1.97 | 67.1/.435 | 71.8/.686 | 67.1/.435 |
| self_pref | 5 | a-b | 74.2/.740 | 81.5/1.17 | 85.6/2.25 | 70.0/.617 | 79.3/.974 | 69.5/.614 |
| self_pref | 10 | a | 91.7/.477 | 92.8/.580 | 90.9/1.53 | 87.8/.366 | 91.0/.444 | 87.8/.366 |
| self_pref | 10 | a-b | 88.8/.603 | 93.0/.734 | 90.8/1.74 | 85.3/.508 | 91.6/.617 | 85.2/.508 |
| self_pref | 20 | a | 87.9/.360 | 96.2/.395 | 92.2/1.14 | 90.6/.277 | 93.2/.303 | 90.6/.277 |
| self_pref | 20 | a-b | 92.2/.449 | 95.5/.492 | 92.5/1.30 | 91.0/.381 | 93.8/.417 | 91.0/.381 |
| self_pref | 30 | a | 93.3/.299 | 93.3/.317 | 93.9/.961 | 91.5/.231 | 93.0/.244 | 91.5/.231 |
| self_pref | 30 | a-b | 93.3/.371 | 94.5/.394 | 93.8/1.08 | 92.5/.317 | 93.7/.336 | 92.5/.317 |
| self_pref | 40 | a | 94.5/.261 | 94.5/.273 | 95.3/.838 | 93.5/.201 | 94.5/.210 | 93.5/.201 |
| self_pref | 40 | a-b | 93.4/.324 | 95.2/.339 | 94.5/.947 | 93.7/.277 | 94.7/.290 | 93.7/.277 |
| self_pref | 50 | a | 90.5/.233 | 90.5/.241 | 94.8/.758 | 91.5/.180 | 92.6/.186 | 91.5/.180 |
| self_pref | 50 | a-b | 93.8/.291 | 94.8/.302 | 94.5/.858 | 93.3/.249 | 94.2/.258 | 93.3/.249 |
| self_pref | 100 | a | 95.5/.166 | 95.5/.169 | 95.1/.561 | 94.7/.131 | 95.2/.133 | 94.7/.131 |
| self_pref | 100 | a-b | 94.9/.208 | 95.0/.212 | 94.5/.632 | 93.8/.180 | 94.2/.183 | 93.8/.180 |
| self_pref | 200 | a | 93.2/.118 | 93.2/.119 | 93.8/.429 | 93.8/.096 | 94.0/.097 | 93.8/.096 |
| self_pref | 200 | a-b | 94.8/.148 | 95.0/.149 | 95.0/.482 | 94.4/.130 | 94.5/.131 | 94.4/.130 |
| compressed | 5 | a | 73.5/.580 | 73.5/.918 | 84.8/.884 | 68.8/.440 | 72.7/.694 | 68.8/.440 |
| compressed | 5 | a-b | 75.3/.742 | 82.5/1.17 | 84.9/1.10 | 70.0/.609 | 80.2/.962 | 69.5/.614 |
| compressed | 10 | a | 92.5/.484 | 93.5/.589 | 89.2/.701 | 87.9/.371 | 91.0/.451 | 87.9/.371 |
| compressed | 10 | a-b | 88.8/.605 | 92.2/.736 | 91.8/.858 | 86.6/.511 | 91.8/.620 | 86.5/.511 |
| compressed | 20 | a | 88.8/.360 | 95.8/.394 | 92.9/.521 | 89.8/.277 | 92.6/.303 | 89.8/.277 |
| compressed | 20 | a-b | 91.8/.452 | 95.3/.495 | 92.8/.634 | 91.2/.384 | 93.4/.420 | 91.2/.384 |
| compressed | 30 | a | 93.8/.298 | 93.8/.316 | 93.0/.432 | 91.3/.230 | 92.8/.243 | 91.3/.230 |
| compressed | 30 | a-b | 93.5/.371 | 93.9/.394 | 93.6/.526 | 92.5/.317 | 94.0/.336 | 92.5/.317 |
| compressed | 40 | a | 92.5/.259 | 92.5/.271 | 94.5/.382 | 93.3/.201 | 94.0/.209 | 93.3/.201 |
| compressed | 40 | a-b | 94.0/.324 | 95.3/.339 | 94.3/.462 | 93.1/.278 | 94.3/.290 | 93.1/.278 |
| compressed | 50 | a | 91.8/.234 | 91.8/.242 | 94.8/.344 | 92.5/.180 | 93.5/.187 | 92.5/.180 |
| compressed | 50 | a-b | 95.0/.291 | 96.0/.302 | 94.0/.418 | 93.6/.249 | 94.4/.258 | 93.6/.249 |
| compressed | 100 | a | 95.2/.166 | 95.2/.169 | 94.7/.256 | 93.8/.131 | 94.4/.133 | 93.8/.131 |
| compressed | 100 | a-b | 94.2/.208 | 94.5/.212 | 93.9/.308 | 93.9/.180 | 94.3/.183 | 93.9/.180 |
| compressed | 200 | a | 93.8/.118 | 93.8/.119 | 95.1/.199 | 93.9/.096 | 94.2/.096 | 93.9/.096 |
| compressed | 200 | a-b | 95.4/.148 | 95.5/.149 | 94.8/.237 | 95.2/.130 | 95.3/.131 | 95.2/.130 |

judge-only coverage (binary; a / a-b, every n):
no_bias 0.0/0.0, additive 0.0/0.0, self_pref 0.0/0.0, compressed 0.0/0.4

coverage over every world, noise kind and estimand (lowest / 10% quantile / median),
and median width ratios:

| n | human-only | human-only t | PPI++ | PPI++ t | PPI++ / human | t / PPI++ |
|---|---|---|---|---|---|---|
| 5 | 72.6/73.5/84.3 | 72.6/74.3/94.7 | 67.1/68.5/78.8 | 71.8/73.9/91.8 | 0.61 | 1.57 |
| 10 | 87.3/87.8/90.2 | 91.1/92.2/94.7 | 83.0/84.6/87.9 | 87.6/89.7/92.8 | 0.61 | 1.21 |
| 20 | 87.2/89.1/92.5 | 93.5/94.2/95.2 | 87.9/89.4/91.6 | 90.1/91.6/93.8 | 0.61 | 1.09 |
| 30 | 91.3/92.7/93.5 | 92.8/93.3/94.7 | 89.6/91.4/92.8 | 91.0/92.8/94.3 | 0.61 | 1.06 |
| 40 | 91.5/92.4/93.9 | 91.5/93.5/95.0 | 91.2/92.1/93.6 | 92.6/93.2/94.5 | 0.62 | 1.04 |
| 50 | 90.5/92.4/93.9 | 90.5/92.7/94.8 | 91.5/93.0/93.7 | 92.6/93.8/94.4 | 0.62 | 1.03 |
| 100 | 93.0/94.2/94.7 | 93.5/94.5/95.0 | 92.9/93.6/94.5 | 93.2/93.9/94.9 | 0.64 | 1.01 |
| 200 | 93.2/94.0/94.8 | 93.2/94.0/95.0 | 93.7/93.9/94.5 | 93.8/94.2/94.6 | 0.68 | 1.01 |

few_labels warns at n = 5, 10, 20, 30
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable

import numpy as np
from scipy import stats

from judgebias.stats.ppi import (
    MeanInterval,
    human_only_mean,
    judge_only_mean,
    ppi_mean,
)
from judgebias.stats.ppi_power import (
    few_labels,
)

MU_A, MU_B = 6.0, 5.5
JUDGE_SD = 0.7
PASS = 5.0  # binary labels: the latent quality above it is a pass (1)

Noise = Callable[[np.random.Generator, float, int], np.ndarray]
NOISES: dict[str, Noise] = {
    "normal": lambda rng, sd, n: sd * rng.standard_normal(n),
    "skewed": lambda rng, sd, n: sd * (rng.exponential(1.0, n) - 1.0),
    "discrete": lambda rng, sd, n: sd * rng.standard_normal(n),
    "binary": lambda rng, sd, n: sd * rng.standard_normal(n),
}
# the judge's g_a, g_b
WORLDS: dict[str, tuple[Callable[[np.ndarray], np.ndarray], ...]] = {
    "no_bias": (lambda y: y, lambda y: y),
    "additive": (lambda y: y + 1.0, lambda y: y + 1.0),
    "self_pref": (lambda y: y + 1.0, lambda y: y),
    "compressed": (lambda y: y, lambda y: y),  # then halved with its noise (`draw`)
}
METHODS = ("judge-only", "human-only", "human-only t", "PPI", "PPI++", "PPI++ t",
           "PPI++ unclipped")


def draw(rng: np.random.Generator, world: str, noise: str, n_items: int
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One data set: human labels and judge scores of systems a and b on every item."""
    draw_noise = NOISES[noise]
    item = draw_noise(rng, 1.0, n_items)
    y_a = MU_A + item + draw_noise(rng, 1.0, n_items)
    y_b = MU_B + item + draw_noise(rng, 1.0, n_items)
    g_a, g_b = WORLDS[world]
    f_a = g_a(y_a) + draw_noise(rng, JUDGE_SD, n_items)
    f_b = g_b(y_b) + draw_noise(rng, JUDGE_SD, n_items)
    if world == "compressed":
        f_a, f_b = 0.5 * f_a + 2.5, 0.5 * f_b + 2.5
    if noise == "discrete":
        f_a, f_b = np.clip(np.round(f_a), 0, 10), np.clip(np.round(f_b), 0, 10)
    if noise == "binary":  # the humans say pass or fail; the judge scores the quality
        y_a, y_b = (y_a > PASS).astype(float), (y_b > PASS).astype(float)
    return y_a, y_b, f_a, f_b


def truths(noise: str) -> tuple[float, float]:
    """The mean label of system a and the difference a - b (binary: pass rates)."""
    if noise != "binary":
        return MU_A, MU_A - MU_B
    pass_a, pass_b = (float(stats.norm.sf(PASS, mu, math.sqrt(2))) for mu in (MU_A, MU_B))
    return pass_a, pass_a - pass_b


def intervals(y: np.ndarray, f: np.ndarray, n: int) -> list[tuple[float, float]]:
    """The methods' intervals (METHODS' order); the first n items are the labelled ones
    (the items are exchangeable draws, so they are a random sample)."""
    y_lab, f_lab, f_unlab = y[:n], f[:n], f[n:]
    results: list[MeanInterval] = [
        judge_only_mean(f), human_only_mean(y_lab), human_only_mean(y_lab, interval="t"),
        ppi_mean(y_lab, f_lab, f_unlab, lam=1.0), ppi_mean(y_lab, f_lab, f_unlab),
        ppi_mean(y_lab, f_lab, f_unlab, interval="t"),
        ppi_mean(y_lab, f_lab, f_unlab, clip=False)]
    return [(r.ci_low, r.ci_high) for r in results]


def cell(rng: np.random.Generator, world: str, noise: str, n: int, reps: int, items: int
         ) -> tuple[np.ndarray, np.ndarray]:
    """Coverage (share) and mean width of every method, for (mean a, a - b)."""
    covered = np.zeros((2, len(METHODS)))
    width = np.zeros((2, len(METHODS)))
    truth = truths(noise)
    for _ in range(reps):
        y_a, y_b, f_a, f_b = draw(rng, world, noise, items)
        for k, (y, f) in enumerate(((y_a, f_a), (y_a - y_b, f_a - f_b))):
            for m, (low, high) in enumerate(intervals(y, f, n)):
                covered[k, m] += low <= truth[k] <= high
                width[k, m] += high - low
    return covered / reps, width / reps


SUMMARY = ("human-only", "human-only t", "PPI++", "PPI++ t")


def row(world: str, n: int, estimand: str, covered: np.ndarray, width: np.ndarray) -> str:
    """One cell's line: coverage (%) / mean width of every method but judge-only (its
    coverage, which does not depend on n, is given per world: `judge_only_line`)."""
    cells = " | ".join(f"{100 * covered[m]:.1f}/{_width(width[m])}"
                       for m in range(1, len(METHODS)))
    return f"| {world} | {n} | {estimand} | {cells} |"


def _width(value: float) -> str:
    """Three significant digits, a leading 0 dropped (.391, 2.07): the rows stay narrow."""
    return f"{value:.3f}".removeprefix("0") if value < 1 else f"{value:.2f}"


def judge_only_line(noise: str, by_world: dict[str, list[np.ndarray]]) -> str:
    """The judge-only interval's coverage per world (a's mean / a - b), over every n."""
    return f"judge-only coverage ({noise}; a / a-b, every n):\n" + ", ".join(
        f"{world} {100 * np.mean(c, axis=0)[0]:.1f}/{100 * np.mean(c, axis=0)[1]:.1f}"
        for world, c in by_world.items())


def summary(coverage: dict[int, list[np.ndarray]], width: dict[int, list[np.ndarray]]
            ) -> list[str]:
    """Per number of labels, coverage of SUMMARY's methods over every world, noise kind
    and estimand (the lowest, the 10 % quantile and the median), and the median widths
    of PPI++ over human-only and of PPI++ t over PPI++."""
    chosen = [METHODS.index(m) for m in SUMMARY]
    ppi, ppi_t, human = (METHODS.index(m) for m in ("PPI++", "PPI++ t", "human-only"))
    lines = ["| n | " + " | ".join(SUMMARY) + " | PPI++ / human | t / PPI++ |",
             "|---|" + "---|" * (len(SUMMARY) + 2)]
    for n in sorted(coverage):
        table, widths = 100 * np.array(coverage[n])[:, chosen], np.array(width[n])
        quantiles = np.quantile(table, [0.0, 0.1, 0.5], axis=0).T
        ratios = (np.median(widths[:, ppi] / widths[:, human]),
                  np.median(widths[:, ppi_t] / widths[:, ppi]))
        lines.append(f"| {n} | " + " | ".join(f"{q[0]:.1f}/{q[1]:.1f}/{q[2]:.1f}"
                                             for q in quantiles)
                     + f" | {ratios[0]:.2f} | {ratios[1]:.2f} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=2000, help="data sets per cell")
    parser.add_argument("--ns", type=int, nargs="+", default=[5, 10, 20, 30, 40, 50, 100, 200],
                        help="labelled items")
    parser.add_argument("--items", type=int, default=1000, help="items in all (N)")
    parser.add_argument("--worlds", nargs="+", choices=list(WORLDS), default=list(WORLDS))
    parser.add_argument("--noises", nargs="+", choices=list(NOISES), default=list(NOISES))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    mc = 1.96 * math.sqrt(0.05 * 0.95 / args.reps)
    print(f"{args.reps} data sets of {args.items} items per cell; 95% intervals; coverage "
          f"(%) / mean width; Monte-Carlo error of a coverage near 95%: +-{100 * mc:.1f} "
          "points (95%)")
    start = time.perf_counter()
    coverage: dict[int, list[np.ndarray]] = {}
    widths: dict[int, list[np.ndarray]] = {}
    for noise in args.noises:
        print(f"\n{noise} noise:\n")
        print("| world | n | estimand | " + " | ".join(METHODS[1:]) + " |")
        print("|---|---|---|" + "---|" * (len(METHODS) - 1))
        judge_only: dict[str, list[np.ndarray]] = {}
        for world in args.worlds:
            for n in args.ns:
                covered, width = cell(rng, world, noise, n, args.reps, args.items)
                judge_only.setdefault(world, []).append(covered[:, 0])
                for k, estimand in enumerate(("a", "a-b")):
                    coverage.setdefault(n, []).append(covered[k])
                    widths.setdefault(n, []).append(width[k])
                    print(row(world, n, estimand, covered[k], width[k]), flush=True)
        print(f"\n{judge_only_line(noise, judge_only)}")
    print("\ncoverage over every world, noise kind and estimand (lowest / 10% quantile / "
          "median),\nand median width ratios:\n")
    print("\n".join(summary(coverage, widths)))
    warned = [n for n in sorted(coverage) if few_labels(n) is not None]
    print(f"\nfew_labels warns at n = {', '.join(map(str, warned)) or 'none of these'}")
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
