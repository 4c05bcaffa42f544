"""The `judgebias` command: one sub-command per pipeline step (DESIGN.md principle 3).

Thin by design: parse arguments, load and validate params.yaml, call library functions,
write artifacts. Every Snakemake rule and DVC stage runs one of these sub-commands.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from judgebias.artifacts import Paths, read_table, write_frame, write_json, write_table
from judgebias.config import ConfigError, load_config, missing_secrets
from judgebias.models.api import PermanentError
from judgebias.models.journal import BudgetExceeded

log = logging.getLogger("judgebias")


def _cmd_validate(args: argparse.Namespace) -> None:
    config = load_config(args.params)
    errors = missing_secrets(config, config["philautia"]["models"])
    if errors:
        raise ConfigError(f"{args.params}: " + "; ".join(errors))
    print(f"{args.params}: valid ({len(config['models'])} models, "
          f"{len(config['philautia']['settings'])} philautia settings)")


def _cmd_dataset(args: argparse.Namespace) -> None:
    from judgebias.data.build import build_dataset

    config = load_config(args.params)
    table = build_dataset(config["dataset"], Path(args.images))
    write_table(table, args.out, "images")
    log.info("dataset: %d images -> %s", len(table), args.out)


def _cmd_caption(args: argparse.Namespace) -> None:
    from judgebias.judging import caption_images

    config = load_config(args.params)
    images = read_table(args.images, "images")
    write_table(caption_images(config, args.generator, images), args.out, "captions")


def _cmd_score(args: argparse.Namespace) -> None:
    from judgebias.judging import score_captions

    config = load_config(args.params)
    images = read_table(args.images, "images")
    captions = read_table(args.captions, "captions")
    table = score_captions(config, args.evaluator, args.setting, images, captions)
    write_table(table, args.out, "scores")


def _cmd_judgements(args: argparse.Namespace) -> None:
    from judgebias.data.build import build_judgements

    config = load_config(args.params)
    spec = config["pomms"]["datasets"][args.dataset]
    table = build_judgements(args.dataset, spec, Path(args.images))
    write_table(table, args.out, "judgements")
    log.info("%s: %d ratings of %d items -> %s", args.dataset, len(table),
             table["item_id"].nunique(), args.out)


def _cmd_judge_items(args: argparse.Namespace) -> None:
    from judgebias.data.judgements import items
    from judgebias.judging import score_items

    config = load_config(args.params)
    judgements = read_table(args.judgements, "judgements")
    table = score_items(config, args.evaluator, args.setting, items(judgements))
    write_table(table, args.out, "item_scores")


def _cmd_agreement(args: argparse.Namespace) -> None:
    from judgebias.agreement import agreement, join_scores, read_scores

    judgements = read_table(args.judgements, "judgements")
    scores = read_scores(args.scores, on=args.on)
    joined = join_scores(judgements, scores, on=args.on, score_column=args.column)
    counts = joined.attrs.get("join_scores", {})
    print(agreement(joined, args.column).to_string(index=False))
    for name, info in counts.items():
        print(f"{name}: {info['n_unmatched_rows']} of {info['n_rows']} ratings had no score; "
              f"{info['n_nan_scores']} scores were missing (excluded, never imputed)")


def _cmd_pomms(args: argparse.Namespace) -> None:
    from judgebias.studies.pomms_steps import run_pomms

    run_pomms(load_config(args.params), Path(args.out_dir))


def _cmd_pomms_heatmap(args: argparse.Namespace) -> None:
    from judgebias.studies.pomms_steps import draw_heatmap

    draw_heatmap(load_config(args.params), Path(args.out))


def _cmd_phi(args: argparse.Namespace) -> None:
    from judgebias.studies.philautia_steps import collect_scores

    config = load_config(args.params)
    long, phi, counts = collect_scores(config, args.scores)
    out = Path(args.out_dir)
    write_frame(long, out / "scores.parquet")
    write_frame(phi, out / "phi.parquet")
    write_frame(counts, out / "counts.parquet")


def _cmd_philautia(args: argparse.Namespace) -> None:
    from judgebias.studies.philautia_steps import ANALYSIS_TABLES, run_analysis

    config = load_config(args.params)
    out = Path(args.out_dir)
    result = run_analysis(config, out / "scores.parquet")
    tables = result.tables()
    for name in ANALYSIS_TABLES:
        write_frame(tables[name], out / f"{name}.parquet")
    write_json(result.metrics(), out / "metrics.json")


def _cmd_heatmaps(args: argparse.Namespace) -> None:
    from judgebias.studies.philautia_steps import draw_figures

    config = load_config(args.params)
    draw_figures(config, args.setting, Path(args.out_dir))


def _cmd_report(args: argparse.Namespace) -> None:
    from judgebias.report.build import write_full_report

    config = load_config(args.params)
    write_full_report(config, args.params, Path(args.out))


def _cmd_plan(args: argparse.Namespace) -> None:
    from judgebias.plan import plan_calls, plan_table

    config = load_config(args.params)
    table = plan_table(plan_calls(config))
    print(table.to_string(index=False))
    print(f"total: {table['needed'].sum()} new calls of {table['requests'].sum()} "
          f"({table['journaled'].sum()} journaled)")
    if table["over_budget"].any():
        over = ", ".join(table.loc[table["over_budget"], "model"])
        raise ConfigError(f"over budget (max_requests): {over}")


def _cmd_serve_sim(args: argparse.Namespace) -> None:
    from judgebias.models.serve_sim import run_from_args

    code = run_from_args(load_config(args.params), args)
    if code:
        raise SystemExit(code)


def _cmd_export_dvc(args: argparse.Namespace) -> None:
    from judgebias.workflow.dvc_export import export_dvc_yaml

    load_config(args.params)
    export_dvc_yaml(Path(args.out), Path(args.snakefile))
    print(f"wrote {args.out}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="judgebias", description=__doc__.splitlines()[0])
    parser.add_argument("--params", default="params.yaml",
                        help="params file (default: %(default)s)")
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.add_argument("--log", help="also write the log to this file (rules pass {log})")
    sub = parser.add_subparsers(dest="command", required=True)

    def add(name: str, func, help_: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_)
        p.set_defaults(func=func)
        return p

    add("validate", _cmd_validate, "validate params.yaml and exit")
    p = add("dataset", _cmd_dataset, "build or import the image dataset")
    p.add_argument("--out", default=Paths.dataset_table)
    p.add_argument("--images", default=Paths.dataset_images)
    p = add("caption", _cmd_caption, "caption every image with one generator")
    p.add_argument("--generator", required=True)
    p.add_argument("--images", default=Paths.dataset_table)
    p.add_argument("--out", required=True)
    p = add("score", _cmd_score, "score one generator's captions with one evaluator")
    for flag in ("--evaluator", "--generator", "--setting", "--captions", "--out"):
        p.add_argument(flag, required=True)
    p.add_argument("--images", default=Paths.dataset_table)
    p = add("judgements", _cmd_judgements, "build or import a caption-judgement dataset")
    p.add_argument("--dataset", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--images", required=True)
    p = add("judge-items", _cmd_judge_items, "score a judgement dataset with one evaluator")
    for flag in ("--evaluator", "--dataset", "--setting", "--judgements", "--out"):
        p.add_argument(flag, required=True)
    p = add("agreement", _cmd_agreement,
            "Kendall tau-b/tau-c of any score column against human judgements")
    p.add_argument("--judgements", required=True, help="a judgements table (parquet)")
    p.add_argument("--scores", required=True,
                   help="item scores: a judge-items output or any CSV/Parquet with the key")
    p.add_argument("--column", required=True, help="the score column to compare")
    p.add_argument("--on", default="item_id", help="key column (default: %(default)s)")
    p = add("pomms", _cmd_pomms, "fit Pomms; Table 1/2 analogues; Phi-tilde with Pomms")
    p.add_argument("--out-dir", required=True)
    p = add("pomms-heatmap", _cmd_pomms_heatmap, "heat map of Phi-tilde with Pomms (Fig. D)")
    p.add_argument("--out", required=True)
    p = add("phi", _cmd_phi, "collect a setting's scores into the Phi matrix")
    p.add_argument("--out-dir", required=True)
    p.add_argument("scores", nargs="+", help="score tables of the setting")
    p = add("philautia", _cmd_philautia, "Phi-tilde, philautia scores, tests, intervals")
    p.add_argument("--out-dir", required=True)
    p = add("heatmaps", _cmd_heatmaps, "figures of one setting")
    p.add_argument("--setting", required=True)
    p.add_argument("--out-dir", required=True)
    p = add("report", _cmd_report, "write the self-contained HTML report")
    p.add_argument("--out", default=Paths.report)
    add("plan", _cmd_plan, "calls each model still needs (and tokens/cost where priced)")
    p = add("serve-sim", _cmd_serve_sim,
            "serve the simulated panel as an OpenAI/Gemini-compatible API on loopback")
    from judgebias.models.serve_sim_args import add_arguments

    add_arguments(p)
    p = add("export-dvc", _cmd_export_dvc, "regenerate dvc.yaml from the Snakemake DAG")
    p.add_argument("--out", default="dvc.yaml")
    p.add_argument("--snakefile", default="Snakefile")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if args.log:
        Path(args.log).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(args.log, mode="w"))
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        handlers=handlers, force=True)
    for noisy in ("httpx", "httpx2", "httpcore", "openai", "google_genai", "urllib3"):
        logging.getLogger(noisy).setLevel(logging.WARNING)  # request lines add nothing
    try:
        args.func(args)
    except ConfigError as exc:
        log.error("%s", exc)
        return 2
    except (PermanentError, BudgetExceeded) as exc:
        log.error("stopped: %s", exc)
        return 3
    finally:
        # Called in-process (tests, notebooks), leave logging as it was found.
        for handler in handlers:
            root.removeHandler(handler)
            handler.close()
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
