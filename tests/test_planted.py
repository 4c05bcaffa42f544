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
    results = {}
    for setting in config["philautia"]["settings"]:
        paths = []
        for e in models:
            for g in models:
                path = root / f"{setting}-{e}-{g}.parquet"
                write_table(score_captions(config, e, setting, images, captions[g]), path,
                            "scores")
                paths.append(str(path))
        long = analysis_scores(paths, config["philautia"]["score"])
        results[setting] = analyse(long, models, families, n_boot=500, n_permutations=2000)
    return config, results


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
    config, results = default_results
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
    _, results = default_results
    for result in results.values():
        counts = result.metrics()["counts"]
        assert counts["n_valid"] + counts["n_excluded"] == counts["n_scores_expected"]
