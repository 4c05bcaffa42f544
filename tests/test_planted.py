"""On the default simulated panel, Philautia-Eval recovers the planted answer.

The planted traits are read from params.yaml, so the test follows the default: the model
with the strongest planted self-preference has the highest philautia score, a model with
none planted has zero inside its bootstrap interval, and the family with a planted family
preference shows it in its sub-matrix (mostly positive off-diagonal entries, top rank).
"""

from __future__ import annotations

import pandas as pd
import pytest

from judgebias.artifacts import write_table
from judgebias.config import validate_params
from judgebias.data.synthetic import build_synthetic_dataset
from judgebias.judging import analysis_scores, caption_images, score_captions
from judgebias.studies.philautia import analyse


@pytest.fixture(scope="module")
def default_results(tmp_path_factory, default_params):
    root = tmp_path_factory.mktemp("planted")
    config = validate_params(default_params)
    config["journal_dir"] = str(root / "journal")
    syn = config["dataset"]["synthetic"]
    images = build_synthetic_dataset(root / "dataset", syn["n_images"], syn["seed"],
                                     syn["image_size"], syn["n_references"])
    models = config["philautia"]["models"]
    captions = {g: caption_images(config, g, images) for g in models}
    families = {m: config["models"][m]["family"] for m in models}
    results, long_tables = {}, {}
    for setting in config["philautia"]["settings"]:
        paths = []
        for e in models:
            for g in models:
                path = root / f"{setting}-{e}-{g}.parquet"
                write_table(score_captions(config, e, setting, images, captions[g]), path,
                            "scores")
                paths.append(str(path))
        long = analysis_scores(paths, config["philautia"]["score"])
        long_tables[setting] = long
        results[setting] = analyse(long, models, families, n_boot=500, n_permutations=2000)
    return config, results, long_tables, root


def planted(config) -> tuple[str, list[str], list[str]]:
    sim = {k: config["models"][k]["sim"] for k in config["philautia"]["models"]}
    strongest = max(sim, key=lambda k: sim[k]["self_preference"])
    neutral = [k for k, t in sim.items() if t["self_preference"] == 0]
    family_pref = sorted({config["models"][k]["family"] for k, t in sim.items()
                          if t.get("preferences", {}).get("families", {}).get(
                              config["models"][k]["family"], 0) > 0})
    return strongest, neutral, family_pref


@pytest.mark.slow
def test_planted_answer_is_recovered(default_results):
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
            assert block.rank == 1, (setting, block.as_dict())


@pytest.mark.slow
def test_every_answer_is_kept_and_counted(default_results):
    _, results, _, _ = default_results
    for result in results.values():
        counts = result.metrics()["counts"]
        assert counts["n_valid"] + counts["n_excluded"] == counts["n_scores_expected"]


@pytest.fixture(scope="module")
def pomms_results(default_results):
    """Pomms on the default panel: the judgement items scored by every evaluator with the
    Pomms setting's prompt, the ensemble fitted, Tables 1 and 2 built."""
    from judgebias.agreement import kendall
    from judgebias.data.judgements import build_synthetic_judgements, items
    from judgebias.judging import score_items, score_values
    from judgebias.studies.pomms import Pomms, table1, table2

    config, _, long_tables, root = default_results
    pomms, models = config["pomms"], config["philautia"]["models"]
    spec = pomms["datasets"]["synthetic"]
    ratings = build_synthetic_judgements(root / "judgements", spec["n_items"], spec["seed"],
                                         n_raters=spec["n_raters"],
                                         rater_noise=spec["rater_noise"])
    for evaluator in models:
        scored = score_items(config, evaluator, pomms["setting"], items(ratings))
        values = score_values(scored, config["philautia"]["score"])
        ratings = ratings.merge(pd.DataFrame({"item_id": scored["item_id"],
                                              evaluator: values}), on="item_id")
    fit_rows = ratings[ratings["split"].isin(["train", "val"])]
    estimator = Pomms(alpha=pomms["alpha"], l1_ratio=pomms["l1_ratio"]).fit(
        fit_rows[models], fit_rows["human_score"].to_numpy(),
        validation=(fit_rows["split"] == "val").to_numpy())
    scores_long = long_tables[pomms["setting"]]
    test = ratings[ratings["split"] == "test"]
    taus = {m: kendall(test[m], test["human_score"])["tau_b"] for m in models}
    taus["Pomms"] = kendall(estimator.predict(test[models]), test["human_score"])["tau_b"]
    return (table1(estimator, ratings, scores_long, models), table2(estimator, scores_long, models),
            taus)


TAU_TOLERANCE = 0.02  # Pomms may trail the best single judge by at most this on test


@pytest.mark.slow
def test_pomms_keeps_human_agreement(pomms_results):
    _, _, taus = pomms_results
    best = max(v for k, v in taus.items() if k != "Pomms")
    assert taus["Pomms"] >= best - TAU_TOLERANCE, taus


@pytest.mark.slow
def test_pomms_mitigates_model_specific_preference(pomms_results, default_results):
    """Seed 000 Table 2 / Fig. D readings, on the simulated panel:
    - for every generator, |Pomms' score of its captions| < |its own philautia score|;
    - Pomms' most extreme entry is less extreme than every evaluator's most extreme one;
    - and smaller than the philautia score of every evaluator whose self-preference the
      bootstrap resolves (interval above zero). The literal "smaller than every
      evaluator's philautia score" cannot hold here: the default plants a model with no
      self-preference, whose philautia score is ~0 by design."""
    _, second, _ = pomms_results
    config, results, _, _ = default_results
    assert second["abs_pomms_below_self"].all(), second
    summary = second.attrs
    assert summary["pomms_most_extreme"] < summary["min_evaluator_most_extreme"]
    resolved = results[config["pomms"]["setting"]].philautia
    resolved = resolved[resolved["ci_low"] > 0]
    assert len(resolved) >= 1
    assert (summary["pomms_most_extreme"] < resolved["score"]).all()
