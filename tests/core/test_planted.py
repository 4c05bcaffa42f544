"""On the default simulated panel, Philautia-Eval recovers the planted answer.

The planted traits are read from params.yaml, so the test follows the default: the model
with the strongest planted self-preference has the highest philautia score, a model with
none planted has zero inside its bootstrap interval, and the family with a planted family
preference shows it in its sub-matrix (mostly positive off-diagonal entries, top rank).
"""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from judgebias.config import validate_params
from judgebias.io.artifacts import write_frame, write_table
from judgebias.models.context import RunContext
from judgebias.studies.philautia.data import build_synthetic_dataset
from judgebias.studies.philautia.jobs import caption_images, score_captions
from judgebias.studies.philautia.params import PhilautiaParams
from judgebias.studies.philautia.steps import collect_scores, run_analysis
from judgebias.studies.philautia.tables import CAPTIONS, IMAGES, SCORES
from judgebias.study import study_models


@pytest.fixture(scope="module")
def default_results(tmp_path_factory, default_params):
    """The philautia study on the default panel, step by step as the pipeline runs it:
    the images table, every generator's captions, every (setting, evaluator, generator)
    scores table, then each setting's long scores table and its analysis."""
    root = tmp_path_factory.mktemp("planted")
    config = validate_params(default_params)
    config["journal_dir"] = str(root / "journal")
    config["philautia"].update(n_bootstrap=500, n_permutations=2000)
    syn = config["philautia"]["dataset"]["synthetic"]
    images = build_synthetic_dataset(root / "dataset", syn["n_images"], syn["seed"],
                                     syn["image_size"], syn["n_references"])
    images_path = str(root / "images.parquet")
    write_table(images, images_path, IMAGES)
    view = PhilautiaParams.from_params(config)
    models = list(view.models)
    captions = {g: str(root / f"captions-{g}.parquet") for g in models}
    run = RunContext(config)
    for g, path in captions.items():
        write_table(caption_images(run, g, images_path, prompt=view.caption_prompt), path,
                    CAPTIONS)
    results, long_paths = {}, {}
    for setting in config["philautia"]["settings"]:
        paths = []
        for e in models:
            for g in models:
                path = root / f"{setting}-{e}-{g}.parquet"
                write_table(score_captions(run, e, setting, images_path, captions[g],
                                           spec=view.settings[setting]), path, SCORES)
                paths.append(str(path))
        long, _, _ = collect_scores(paths, models, view.score)
        long_paths[setting] = str(root / f"{setting}-scores.parquet")
        write_frame(long, long_paths[setting])
        results[setting] = run_analysis(view, long_paths[setting])
    return config, results, long_paths, root


def planted(config) -> tuple[str, list[str], list[str]]:
    sim = {k: config["panel"][k]["sim"] for k in study_models(config, "philautia")}
    strongest = max(sim, key=lambda k: sim[k]["self_preference"])
    neutral = [k for k, t in sim.items() if t["self_preference"] == 0]
    family_pref = sorted({config["panel"][k]["family"] for k, t in sim.items()
                          if t.get("preferences", {}).get("families", {}).get(
                              config["panel"][k]["family"], 0) > 0})
    return strongest, neutral, family_pref


def mean_off_diagonal_rank(phi_t: pd.DataFrame, members: list[str]) -> int:
    """Rank (1 = largest) of the members' principal sub-matrix of Phi-tilde by its mean
    off-diagonal entry, among all principal sub-matrices of the same size."""
    values = phi_t.to_numpy()
    k, index = len(members), [list(phi_t.index).index(m) for m in members]

    def mean_off(subset) -> float:
        block = values[np.ix_(subset, subset)]
        return float(block[~np.eye(k, dtype=bool)].mean())

    own = mean_off(index)
    return 1 + sum(mean_off(list(s)) > own for s in combinations(range(len(values)), k))


@pytest.mark.slow
def test_planted_answer_is_recovered(default_results):
    """The planted family preference (+0.01) is small against the judges' noise: its
    block is mostly positive and has by far the largest mean entry of all 3x3 blocks, but
    its *count* of positive entries ranks first in one setting and second in the other
    (the paper's own Qwen family is "second-largest", seed 000 §6.2). The count was
    first in both only with the old per-position expected score, whose errors did not
    average out (the sampled $NN$ scores gave rank 2 with the old code too)."""
    config, results, _, _ = default_results
    strongest, neutral, family_pref = planted(config)
    assert neutral and family_pref
    for setting, result in results.items():
        table: pd.DataFrame = result.philautia
        assert table["score"].idxmax() == strongest, setting
        for model in neutral:
            low, high = table.loc[model, ["ci_low", "ci_high"]]
            assert low <= 0 <= high, f"{setting}: {model} interval [{low}, {high}]"
        # the strongest self-preference is clearly separated from the planted neutral one
        assert table.loc[strongest, "ci_low"] > table.loc[neutral, "score"].max()
        families = {f.family: f for f in result.families}
        for family in family_pref:
            block = families[family]
            assert block.share_positive >= 2 / 3, (setting, block.as_dict())
            assert block.rank_competition <= 2, (setting, block.as_dict())
            assert block.rank_dense <= block.rank_competition
            assert mean_off_diagonal_rank(result.phi_tilde, block.members) == 1, setting
            others = [f.mean_off_diagonal for f in result.families if f.family != family]
            assert block.mean_off_diagonal > max(others), (setting, block.as_dict())
    ranks = [{f.family: f for f in r.families}[family_pref[0]].rank_competition
             for r in results.values()]
    assert min(ranks) == 1, ranks


@pytest.mark.slow
def test_every_answer_is_kept_and_counted(default_results):
    _, results, _, _ = default_results
    for result in results.values():
        counts = result.metrics()["counts"]
        assert counts["n_valid"] + counts["n_excluded"] == counts["n_scores_expected"]


@pytest.fixture(scope="module")
def pomms_results(default_results):
    """Pomms on the default panel, step by step as the pipeline runs it: the judgement
    items scored by every evaluator with pomms.judgement_setting's prompt (item_scores),
    the judged ratings, the ensemble fitted, Tables 1 and 2 built; and the `pomms` step
    itself (steps.fit) on the same inputs."""
    from judgebias.stats.agreement import kendall
    from judgebias.studies.pomms.data import build_synthetic_judgements
    from judgebias.studies.pomms.jobs import score_items
    from judgebias.studies.pomms.measures import table1, table2
    from judgebias.studies.pomms.params import PommsParams
    from judgebias.studies.pomms.steps import fit, fit_pomms, judged_ratings
    from judgebias.studies.pomms.tables import ITEM_SCORES, JUDGEMENTS, TABLES

    config, _, long_paths, root = default_results
    pomms = PommsParams.from_params(config)
    models = list(pomms.models)
    spec = pomms.datasets["synthetic"]
    table = build_synthetic_judgements(root / "judgements", spec.n_items, spec.seed,
                                       n_raters=spec.n_raters, rater_noise=spec.rater_noise)
    judgements = str(root / "judgements.parquet")
    write_table(table.assign(dataset="synthetic"), judgements, JUDGEMENTS)
    item_scores = []
    for evaluator in models:
        path = str(root / f"items-{evaluator}.parquet")
        write_table(score_items(RunContext(config), evaluator, pomms.judgement_setting,
                                judgements, spec=pomms.settings[pomms.judgement_setting]),
                    path, ITEM_SCORES)
        item_scores.append(path)
    ratings = judged_ratings([judgements], item_scores, models, pomms.score)
    assert len(ratings) == len(table) and set(models) <= set(ratings.columns)
    scores_long = pd.read_parquet(long_paths[pomms.setting])
    estimator = fit_pomms(pomms, ratings, scores_long)
    test = ratings[ratings["split"] == "test"]
    taus = {m: kendall(test[m], test["human_score"])["tau_b"] for m in models}
    taus["Pomms"] = kendall(estimator.predict(test[models]), test["human_score"])["tau_b"]
    out = root / "pomms"
    fit(pomms, judgements=[Path(judgements)], item_scores=list(map(Path, item_scores)),
        scores=Path(long_paths[pomms.setting]), metrics=out / "metrics.json",
        tables=[out / f"{table}.parquet" for table in TABLES],
        ensemble=out / "ensemble.json", model_card=out / "ensemble.md")
    return (table1(estimator, ratings, scores_long, models), table2(estimator, scores_long, models),
            taus, estimator, out)


TAU_TOLERANCE = 0.02  # Pomms may trail the best single judge by at most this on test


@pytest.mark.slow
def test_pomms_keeps_human_agreement(pomms_results):
    _, _, taus, _, _ = pomms_results
    best = max(v for k, v in taus.items() if k != "Pomms")
    assert taus["Pomms"] >= best - TAU_TOLERANCE, taus


@pytest.mark.slow
def test_pomms_mitigates_model_specific_preference(pomms_results, default_results):
    """Seed 000 Table 2 / Fig. D readings, on the simulated panel:
    - for every generator whose self-preference the bootstrap resolves (interval above
      zero), |Pomms' score of its captions| < |its own philautia score|, and on average
      over all generators Pomms' scores are smaller in magnitude than the philautia ones;
    - Pomms' most extreme entry is less extreme than every evaluator's most extreme one;
    - and smaller than the philautia score of every resolved evaluator.
    The literal "for every generator" cannot hold here: the default plants no or a slight
    (+0.005) self-preference in five models, whose philautia scores are noise around zero
    (intervals spanning zero, |score| down to ~0.02 with the exact expected score), so
    comparing Pomms to them compares two noise values."""
    _, second, _, _, _ = pomms_results
    config, results, _, _ = default_results
    resolved = results[config["pomms"]["setting"]].philautia
    resolved = resolved[resolved["ci_low"] > 0]
    assert len(resolved) >= 1
    table = second.table.set_index("generator")
    assert table.loc[resolved.index, "abs_pomms_below_self"].all(), second.table
    assert table["pomms"].abs().mean() < table["self"].abs().mean(), second.table
    assert second.pomms_most_extreme < second.min_evaluator_most_extreme
    assert (second.pomms_most_extreme < resolved["score"]).all()


@pytest.mark.slow
def test_pomms_step_writes_what_the_estimator_gives(pomms_results):
    """The `pomms` step (steps.fit) fits the same ensemble and writes its tables."""
    import json

    first, second, taus, estimator, out = pomms_results
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["members"] == list(estimator.members_)
    assert metrics["pomms_most_extreme"] == pytest.approx(second.pomms_most_extreme)
    assert metrics["select"] == estimator.select == "min_philautia"
    written = pd.read_parquet(out / "table2.parquet")
    pd.testing.assert_frame_equal(written.reset_index(drop=True),
                                  second.table.reset_index(drop=True), check_like=True)
    agreement = pd.read_parquet(out / "agreement.parquet").set_index(["split", "metric"])
    for metric, tau in taus.items():  # the same tau on the test split, judges and Pomms
        assert agreement.loc[("test", metric), "tau_b"] == pytest.approx(tau)
    assert set(first["label"]) >= set(taus) - {"Pomms"}
    for name in ("steps", "table1", "phi_tilde"):
        assert (out / f"{name}.parquet").exists()
