"""Benchmark: configurations per second of MMB's factorial experiment (seed 002 §5).

    .venv/bin/python benchmarks/mmb_factorial.py [--test 14400] [--pool 500] [--prompts 100]
        [--sampling-seeds 50] [--ks 4 8 16 32 64] [--cluster-seeds 5] [--jobs 2]
        [--bpe-reference printed corrected] [--curves-for 5 10 20]

Why: the paper's design has 52,200 configurations (3 prompt counts x 4 validation sizes x
3 training seeds x 50 sampling seeds x (4 baselines + 5 K x 5 clustering seeds)) evaluated
on 14,400 test pairs; the paper needs 1-2 s per fit, and the reference BPE implementation
(amzn/BayesPE, LBFGS in torch) about 0.32 s per fit. Ours reuses every judged probability
and computes each configuration's weights in closed form, predictions as batched matrix
products and metrics batched. Random probabilities at the paper's scale; the defaults are
the full design as the report runs it: error-coverage curves for every prompt count
(Fig. 3 and Fig. 5) and the reference BPE's two regulariser variants as extra baselines
(iterative: a batched Newton solve per prompt subset, bpe_reference.py). Also times the
plain route for reference: one estimator fit plus metrics per configuration, in a loop
over a sample of configurations. Prints Markdown.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from judgebias.studies.mmb.estimator import BayesianPromptEnsemble
from judgebias.studies.mmb.measures.factorial import Design, Split, run_factorial
from judgebias.studies.mmb.measures.metrics import batch_metrics


def random_split(n_test: int, n_pool: int, n_prompts: int, ks: list[int], seeds: int,
                 rng: np.random.Generator) -> Split:
    quality = rng.normal(size=(n_test + n_pool, 1))
    slopes = rng.uniform(0.2, 3.0, size=(1, n_prompts))
    P = 1 / (1 + np.exp(-(quality * slopes + rng.normal(0, 0.5, (n_test + n_pool,
                                                                  n_prompts)))))
    y = (rng.random(n_test + n_pool) < 1 / (1 + np.exp(-2 * quality[:, 0]))).astype(int)
    R = {}
    for k in ks:
        for c in range(seeds):
            logits = rng.normal(size=(n_test + n_pool, k)) * 3
            R[(k, c)] = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    return Split(P[n_test:], y[n_test:], P[:n_test], y[:n_test],
                 {kc: r[n_test:] for kc, r in R.items()}, {kc: r[:n_test] for kc, r in R.items()})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--test", type=int, default=14_400)
    parser.add_argument("--pool", type=int, default=500)
    parser.add_argument("--prompts", type=int, default=100)
    parser.add_argument("--sampling-seeds", type=int, default=50)
    parser.add_argument("--ks", type=int, nargs="+", default=[4, 8, 16, 32, 64])
    parser.add_argument("--cluster-seeds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--loop-sample", type=int, default=20)
    parser.add_argument("--bpe-reference", nargs="*", default=["printed", "corrected"],
                        choices=["printed", "corrected"],
                        help="reference-BPE variants to fit (none: the four §5 baselines)")
    parser.add_argument("--curves-for", type=int, nargs="*", default=None,
                        help="prompt counts with error-coverage curves (default: all)")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    split = random_split(args.test, args.pool, args.prompts, args.ks, args.cluster_seeds, rng)
    design = Design(n_prompts=[5, 10, 20], n_val=[5, 10, 20, 50], train_seeds=range(3),
                    sampling_seeds=range(args.sampling_seeds),
                    coverages=np.linspace(0.05, 1, 20), curves_for=args.curves_for,
                    n_jobs=args.jobs, bpe_reference=tuple(args.bpe_reference))
    start = time.perf_counter()
    frame = run_factorial(split, design)
    total = time.perf_counter() - start
    loop = []
    for i in range(args.loop_sample):
        cols = np.random.default_rng(i).permutation(args.prompts)[:10]
        val = np.random.default_rng(i).permutation(args.pool)[:20]
        tick = time.perf_counter()
        bpe = BayesianPromptEnsemble().fit(split.P_pool[np.ix_(val, cols)], split.y_pool[val])
        batch_metrics(bpe.predict_proba(split.P_test[:, cols])[:, 1], split.y_test)
        loop.append(time.perf_counter() - tick)
    print("| measure | value |\n|---|---|")
    print(f"| configurations | {len(frame):,} |")
    print(f"| test pairs x pool prompts | {args.test:,} x {args.prompts} |")
    print(f"| processes | {args.jobs} |")
    print(f"| factorial total (s) | {total:.1f} |")
    print(f"| configurations per second | {len(frame) / total:,.0f} |")
    print(f"| ms per configuration (vectorised) | {1000 * total / len(frame):.2f} |")
    print(f"| ms per configuration, one BPE fit + metrics in a loop (median of "
          f"{args.loop_sample}) | {1000 * float(np.median(loop)):.1f} |")


if __name__ == "__main__":
    main()
