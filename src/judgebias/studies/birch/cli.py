"""BIRCH's CLI steps, one per rule. Each handler imports only the step module it runs: a
rule's code dependencies are derived from these imports (judgebias.workflow.codedeps)."""

from __future__ import annotations

import argparse
from pathlib import Path

from judgebias.config import load_config


def _data(args: argparse.Namespace) -> None:
    from judgebias.studies.birch.dataset import build_data

    build_data(load_config(args.params), args.dataset, args.pairs, Path(args.images),
               args.summary)


def _label(args: argparse.Namespace) -> None:
    from judgebias.studies.birch.steps import label

    label(load_config(args.params), args.labeller, args.pairs, args.out)


def _prepare(args: argparse.Namespace) -> None:
    from judgebias.studies.birch.steps import prepare

    prepare(load_config(args.params), args.model, args.step, args.pairs, args.out)


def _equalise(args: argparse.Namespace) -> None:
    from judgebias.studies.birch.steps import equalise

    equalise(load_config(args.params), args.pairs, args.texts, args.equalised, args.summary)


def _judge(args: argparse.Namespace) -> None:
    from judgebias.studies.birch.steps import judge

    judge(load_config(args.params), args.judge, args.variant, args.pairs, args.texts,
          args.out)


def _analysis(args: argparse.Namespace) -> None:
    from judgebias.studies.birch.analysis import analyse

    analyse(load_config(args.params), args.dataset, args.pairs, args.equalised, args.labels,
            args.verdicts, Path(args.out_dir))


def _supplement(args: argparse.Namespace) -> None:
    from judgebias.studies.birch.supplement import supplement

    supplement(load_config(args.params), args.pairs, args.verdicts, args.texts,
               Path(args.out_dir))


def register(add) -> None:
    """Add the BIRCH steps to the `judgebias` command."""
    p = add("birch-data", _data, "build or import the pairwise VQA preference data (BIRCH)")
    for flag in ("--dataset", "--pairs", "--images", "--summary"):
        p.add_argument(flag, required=True)
    p = add("birch-label", _label, "informativeness labels, both orders, image withheld")
    for flag in ("--labeller", "--pairs", "--out"):
        p.add_argument(flag, required=True)
    p = add("birch-prepare", _prepare, "a judge's reference, caption or anchor per pair")
    for flag in ("--model", "--pairs", "--out"):
        p.add_argument(flag, required=True)
    p.add_argument("--step", required=True, choices=("reference", "caption", "anchor"))
    p = add("birch-equalise", _equalise, "lengthen the shorter answers (Appendix C.5)")
    for flag in ("--pairs", "--texts", "--equalised", "--summary"):
        p.add_argument(flag, required=True)
    p = add("birch-judge", _judge, "judge every pair with one judge in one variant")
    for flag in ("--judge", "--variant", "--pairs", "--out"):
        p.add_argument(flag, required=True)
    p.add_argument("--texts", default=None)
    p = add("birch-analysis", _analysis, "IRS, IB, LB, down-sampling, Tables 1-4, 7, 8, figures")
    p.add_argument("--verdicts", nargs="+", required=True)
    for flag in ("--dataset", "--pairs", "--labels", "--out-dir"):
        p.add_argument(flag, required=True)
    p.add_argument("--equalised", default=None)
    p = add("birch-supplement", _supplement,
            "Fig. 11 per-domain image reliance, Table 5 anchor quality, Table 6 cost")
    p.add_argument("--verdicts", nargs="+", required=True)
    p.add_argument("--texts", nargs="*", default=[])
    for flag in ("--pairs", "--out-dir"):
        p.add_argument(flag, required=True)
