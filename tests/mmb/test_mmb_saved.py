"""MMB's fitted de-biaser as an artifact (results/mmb/<judge>/debiaser.json): the estimator
for new image pairs (estimator.ClusteredBayesianEnsemble) on hand-made cases (hard
clusters are per-cluster BPE, eq. 10 by hand, the clustering step's soft assignment to
the bit); saved as JSON (judgebias.io.saved) and loaded by `judgebias.load` in a fresh
interpreter with the same predictions to the last bit; a file naming another class, or
inconsistent arrays, refused by name; and the pipeline's `mmb_save` rule writes it, fitted
as the factorial fits the report's cell in its first replicate, predicting on the audit's
test pairs what the factorial reports there."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers.project import (
    BIN,
    job,
    make_project,
    planned_jobs,
    run,
    small_mmb,
    study_params,
    undeclared_reads,
    write_params,
)
from sklearn.base import clone
from sklearn.utils.estimator_checks import (
    check_get_params_invariance,
    check_no_attributes_set_in_init,
)

import judgebias
from judgebias.io.saved import SavedFileError, save
from judgebias.studies.mmb.estimator import (
    BayesianPromptEnsemble,
    ClusteredBayesianEnsemble,
    MultimodalBayesianEnsemble,
    saved_instructions,
)
from judgebias.studies.mmb.measures.cluster import normalise, soft_assign

JUDGE = "corvid-pro"
CLASS = "judgebias.studies.mmb.estimator.ClusteredBayesianEnsemble"
DESCRIBED = {"judge": JUDGE, "judge_prompt": "mmb_pairwise",
             "probability": {"source": "logprobs", "order": "random"},
             "embedding": {"architecture": "ViT-B-16", "pretrained": None,
                           "checkpoint": None, "init_seed": 0, "image_size": 64}}


def _hard_case() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Six pairs, three in each of two clusters (both images on a centroid's axis); in
    cluster 0 instruction 0 is right, in cluster 1 instruction 1."""
    g = np.eye(3)[:2]
    cluster = np.array([0, 0, 0, 1, 1, 1])
    X = np.array([[0.9, 0.3], [0.2, 0.6], [0.8, 0.5],
                  [0.4, 0.9], [0.7, 0.1], [0.55, 0.8]])
    y = np.array([1, 0, 1, 1, 0, 1])
    return X, y, g[cluster], g[cluster], g


def _random_case(n: int = 40, a: int = 4, k: int = 3, d: int = 8, seed: int = 0
                 ) -> tuple[pd.DataFrame, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    g = rng.standard_normal((k, d))
    centre = rng.integers(k, size=n)
    ea = (g[centre] + 0.6 * rng.standard_normal((n, d))).astype(np.float32)
    eb = (g[centre] + 0.6 * rng.standard_normal((n, d))).astype(np.float32)
    X = pd.DataFrame(rng.uniform(0.02, 0.98, (n, a)), columns=[f"ins-{i}" for i in range(a)])
    return X, rng.integers(2, size=n), ea, eb, g.astype(np.float32)


# -------------------------------------------------------------------------------------
# the estimator on hand-made cases
# -------------------------------------------------------------------------------------


def test_hard_clusters_are_bpe_per_cluster_and_eq10_is_their_mixture() -> None:
    X, y, ea, eb, g = _hard_case()
    est = ClusteredBayesianEnsemble(tau=0.01).fit(X, y, embeddings_a=ea, embeddings_b=eb,
                                                  centroids=g)
    R = est.responsibilities(ea, eb)  # cos 1 vs 0 at tau 0.01: e^-100, one-hot in float64
    np.testing.assert_array_equal(R.argmax(axis=1), [0, 0, 0, 1, 1, 1])
    for z, rows in enumerate((slice(0, 3), slice(3, 6))):
        bpe = BayesianPromptEnsemble().fit(X[rows], y[rows])
        np.testing.assert_allclose(est.weights_[z], bpe.weights_, rtol=1e-12)
        np.testing.assert_allclose(est.predict_proba(X[rows], embeddings_a=ea[rows],
                                                     embeddings_b=eb[rows]),
                                   bpe.predict_proba(X[rows]), rtol=1e-12)
    assert est.top_prompts_.tolist() == [0, 1]
    np.testing.assert_allclose(est.cluster_mass_, [3, 3])
    assert est.n_clusters_ == 2 and est.n_validation_ == 6 and est.n_features_in_ == 2


def test_eq10_by_hand_with_soft_assignments() -> None:
    """p(y | x) = sum_z p(z | x) sum_a w_za p(y | x, a) (seed 002 eq. 10), with p(z | pair)
    the mean of each image's softmax_z(cos / tau) (spec mmb.md), written out as loops."""
    X, y, ea, eb, g = _random_case(n=12, a=3, k=2, d=4, seed=1)
    est = ClusteredBayesianEnsemble(tau=0.5).fit(X, y, embeddings_a=ea, embeddings_b=eb,
                                                 centroids=g)
    P = X.to_numpy()
    w = est.weights_
    for j in range(len(P)):
        r = np.zeros(2)
        for image in (ea[j], eb[j]):
            cos = [image @ g[z] / np.linalg.norm(image) / np.linalg.norm(g[z]) for z in (0, 1)]
            r += np.exp(np.divide(cos, 0.5)) / np.exp(np.divide(cos, 0.5)).sum() / 2
        p = sum(r[z] * sum(w[z, a] * P[j, a] for a in range(3)) for z in (0, 1))
        got = est.predict_proba(X.iloc[[j]], embeddings_a=ea[[j]], embeddings_b=eb[[j]])
        np.testing.assert_allclose(got, [[1 - p, p]], rtol=1e-6)
        assert est.predict(X.iloc[[j]], embeddings_a=ea[[j]],
                           embeddings_b=eb[[j]])[0] == int(p >= 0.5)
    # the weights are MultimodalBayesianEnsemble's on those responsibilities (reused)
    R = est.responsibilities(ea, eb)
    inner = MultimodalBayesianEnsemble().fit(P, y, responsibilities=R)
    assert inner.weights_.tobytes() == w.tobytes()


def test_assignments_are_the_clustering_steps_to_the_bit() -> None:
    """measures.cluster's soft assignment, for both ways a pair is assigned
    (measures.factorial_inputs.responsibilities on pair_cosines' columns)."""
    X, y, ea, eb, g = _random_case()
    by_prob = ClusteredBayesianEnsemble(tau=0.05).fit(X, y, embeddings_a=ea,
                                                      embeddings_b=eb, centroids=g)
    expected = (soft_assign(ea, g, 0.05) + soft_assign(eb, g, 0.05)) / 2
    assert by_prob.responsibilities(ea, eb).tobytes() == expected.tobytes()
    by_mean = ClusteredBayesianEnsemble(tau=0.05, pair="mean_embedding").fit(
        X, y, embeddings_a=ea, embeddings_b=eb, centroids=g)
    expected = soft_assign(normalise(ea) + normalise(eb), g, 0.05)
    assert by_mean.responsibilities(ea, eb).tobytes() == expected.tobytes()
    assert by_mean.centroids_.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(by_mean.centroids_, axis=1), 1, rtol=1e-6)


def test_k1_is_bpe_and_no_validation_data_is_avg() -> None:
    X, y, ea, eb, _ = _random_case()
    one = ClusteredBayesianEnsemble().fit(X, y, embeddings_a=ea, embeddings_b=eb,
                                          centroids=np.ones((1, 8)))
    np.testing.assert_allclose(one.weights_[0], BayesianPromptEnsemble().fit(X, y).weights_,
                               rtol=1e-12)
    none = ClusteredBayesianEnsemble().fit(X.iloc[:0], y[:0], embeddings_a=ea[:0],
                                           embeddings_b=eb[:0], centroids=np.eye(8)[:3])
    np.testing.assert_allclose(none.weights_, 0.25)
    assert none.n_validation_ == 0


def test_columns_are_read_by_instruction_id() -> None:
    X, y, ea, eb, g = _random_case()
    est = ClusteredBayesianEnsemble().fit(X, y, embeddings_a=ea, embeddings_b=eb,
                                          centroids=g, instruction_texts=list("abcd"))
    assert est.instructions_.tolist() == list(X.columns)
    assert est.instruction_texts_.tolist() == list("abcd")
    wide = X.assign(other=0.5)[["other", *reversed(X.columns)]]  # more columns, reordered
    kw = {"embeddings_a": ea, "embeddings_b": eb}
    assert (est.predict_proba(wide, **kw).tobytes()
            == est.predict_proba(X.to_numpy(), **kw).tobytes())
    with pytest.raises(ValueError, match=r"lacks the instruction columns \['ins-3'\]"):
        est.predict_proba(X.drop(columns="ins-3"), **kw)
    with pytest.raises(ValueError, match="3 instructions, fitted with 4"):
        est.predict_proba(X.to_numpy()[:, :3], **kw)
    with pytest.raises(ValueError, match=r"embeddings_a must have shape \(n_pairs, 8\)"):
        est.predict_proba(X, embeddings_a=ea[:, :5], embeddings_b=eb)
    with pytest.raises(ValueError, match="embedded pairs for"):
        est.predict_proba(X.iloc[:3], **kw)
    ids = ClusteredBayesianEnsemble().fit(X.to_numpy(), y, embeddings_a=ea, embeddings_b=eb,
                                          centroids=g, instructions=["p", "q", "r", "s"])
    assert ids.instructions_.tolist() == ["p", "q", "r", "s"]


def test_audit_keeps_held_out_confidence_and_correctness() -> None:
    X, y, ea, eb, g = _random_case(n=60)
    est = ClusteredBayesianEnsemble().fit(X.iloc[:20], y[:20], embeddings_a=ea[:20],
                                          embeddings_b=eb[:20], centroids=g)
    kw = {"embeddings_a": ea[20:], "embeddings_b": eb[20:]}
    assert not hasattr(est, "audit_confidence_")
    est.audit(X.iloc[20:], y[20:], groups=[f"g{i // 4}" for i in range(40)], **kw)
    p = est.predict_proba(X.iloc[20:], **kw)[:, 1]
    assert est.audit_confidence_.tobytes() == np.maximum(p, 1 - p).tobytes()
    assert est.audit_confidence_.tobytes() == est.confidence(X.iloc[20:], **kw).tobytes()
    np.testing.assert_array_equal(est.audit_correct_, (p >= 0.5) == (y[20:] == 1))
    assert est.audit_correct_.dtype == bool and est.audit_groups_[5] == "g1"
    assert est.score(X.iloc[20:], y[20:], **kw) == est.audit_correct_.mean()


@pytest.mark.parametrize(("params", "message"), [
    ({"tau": 0}, "tau must be a positive number"),
    ({"tau": True}, "tau must be a positive number"),
    ({"entropy": "per_pair"}, "entropy must be one of"),
    ({"pair": "max"}, "pair must be one of"),
    ({"embedding": {"architecture": "ViT-B-16", "device": "cuda"}}, "unknown keys"),
    ({"probability": "logprobs"}, "probability must be a mapping"),
])
def test_bad_params_are_refused_in_fit(params: dict, message: str) -> None:
    X, y, ea, eb, g = _hard_case()
    with pytest.raises(ValueError, match=message):
        ClusteredBayesianEnsemble(**params).fit(X, y, embeddings_a=ea, embeddings_b=eb,
                                                centroids=g)


def test_scikit_learn_conventions() -> None:
    check_no_attributes_set_in_init("ClusteredBayesianEnsemble",
                                    ClusteredBayesianEnsemble(**DESCRIBED))
    check_get_params_invariance("ClusteredBayesianEnsemble",
                                ClusteredBayesianEnsemble(**DESCRIBED))
    X, y, ea, eb, g = _random_case()
    est = ClusteredBayesianEnsemble(**DESCRIBED).fit(X, y, embeddings_a=ea,
                                                     embeddings_b=eb, centroids=g)
    again = clone(est).fit(X, y, embeddings_a=ea, embeddings_b=eb, centroids=g)
    assert again.weights_.tobytes() == est.weights_.tobytes()


def test_saved_instructions_are_the_factorials_first_sampling_seed() -> None:
    """estimator.saved_instructions (what the leaderboard asks a judge before MMB is
    fitted) draws as measures.factorial.prompt_order does for sampling seed 0."""
    from types import SimpleNamespace

    from judgebias.studies.mmb.measures.factorial import prompt_order

    for size, n_prompts in ((44, 10), (44, 44), (7, 3), (100, 20)):
        pool = [f"ins-{i}" for i in range(size)]
        view = SimpleNamespace(report=SimpleNamespace(n_prompts=n_prompts))
        assert saved_instructions(pool, view) == [
            pool[i] for i in prompt_order(0, size)[:n_prompts]]
    with pytest.raises(ValueError, match="11 prompts asked, but the pool has 10"):
        saved_instructions(pool[:10], SimpleNamespace(report=SimpleNamespace(n_prompts=11)))


# -------------------------------------------------------------------------------------
# saved and loaded
# -------------------------------------------------------------------------------------

FRESH = """\
import sys
import numpy as np
import judgebias
est = judgebias.load(sys.argv[1])
d = np.load(sys.argv[2])
kw = {"embeddings_a": d["a"], "embeddings_b": d["b"]}
np.savez(sys.argv[3], proba=est.predict_proba(d["X"], **kw), predict=est.predict(d["X"], **kw),
         confidence=est.confidence(d["X"], **kw), R=est.responsibilities(d["a"], d["b"]),
         weights=est.weights_, centroids=est.centroids_,
         audit_confidence=est.audit_confidence_, audit_correct=est.audit_correct_)
print(type(est).__module__, type(est).__name__)
"""


@pytest.fixture(scope="module")
def fitted() -> ClusteredBayesianEnsemble:
    X, y, ea, eb, g = _random_case(n=80)
    est = ClusteredBayesianEnsemble(tau=0.03, **DESCRIBED).fit(
        X.iloc[:30], y[:30], embeddings_a=ea[:30], embeddings_b=eb[:30], centroids=g,
        instruction_texts=["Which is better?", "Pick one.", "Préférence ?", "As a painter"])
    return est.audit(X.iloc[30:], y[30:], embeddings_a=ea[30:], embeddings_b=eb[30:],
                     groups=[f"g{i // 5}" for i in range(50)])


def test_the_study_declares_it_saveable() -> None:
    from judgebias.study import saved_classes

    assert "judgebias.studies.mmb.estimator:ClusteredBayesianEnsemble" in saved_classes()


def test_a_fresh_interpreter_predicts_the_same_bits(fitted, tmp_path: Path) -> None:
    path = save(fitted, tmp_path / "debiaser.json", card={"judge": JUDGE})
    X, _, ea, eb, _ = _random_case(n=25, seed=7)  # new pairs
    np.savez(tmp_path / "in.npz", X=X.to_numpy(), a=ea, b=eb)
    out = subprocess.run([sys.executable, "-c", FRESH, str(path), str(tmp_path / "in.npz"),
                          str(tmp_path / "out.npz")], check=True, capture_output=True,
                         text=True)
    assert out.stdout.split() == ["judgebias.studies.mmb.estimator", "ClusteredBayesianEnsemble"]
    got = np.load(tmp_path / "out.npz")
    kw = {"embeddings_a": ea, "embeddings_b": eb}
    expected = {"proba": fitted.predict_proba(X, **kw), "predict": fitted.predict(X, **kw),
                "confidence": fitted.confidence(X, **kw),
                "R": fitted.responsibilities(ea, eb), "weights": fitted.weights_,
                "centroids": fitted.centroids_, "audit_confidence": fitted.audit_confidence_,
                "audit_correct": fitted.audit_correct_}
    assert sorted(got.files) == sorted(expected)
    for name, values in expected.items():
        assert values.dtype == got[name].dtype, name
        assert values.tobytes() == got[name].tobytes(), name  # 0 ulp


def test_the_loaded_estimator_is_the_fitted_one(fitted, tmp_path: Path) -> None:
    card = {"judge": JUDGE, "agreement_test": {"accuracy": 0.75, "n": 50}}
    path = save(fitted, tmp_path / "debiaser.json", card=card)
    loaded = judgebias.load(path)
    assert type(loaded) is ClusteredBayesianEnsemble
    assert loaded.get_params() == fitted.get_params()
    for name in ("instructions_", "instruction_texts_", "audit_groups_"):
        assert getattr(loaded, name).tolist() == getattr(fitted, name).tolist(), name
    for name in ("centroids_", "weights_", "cluster_mass_", "top_prompts_",
                 "audit_confidence_", "audit_correct_", "classes_"):
        assert getattr(loaded, name).tobytes() == getattr(fitted, name).tobytes(), name
    for name in ("n_features_in_", "n_clusters_", "n_validation_"):
        assert getattr(loaded, name) == getattr(fitted, name), name
    assert loaded.ensemble_.weights_ is loaded.weights_
    assert judgebias.load_card(path) == card
    X, y, ea, eb, g = _random_case()
    unaudited = clone(fitted).fit(X, y, embeddings_a=ea, embeddings_b=eb, centroids=g)
    again = judgebias.load(save(unaudited, tmp_path / "plain.json"))
    assert not hasattr(again, "audit_confidence_") and again.instruction_texts_ is None


def _tampered(fitted, tmp_path: Path, edit) -> Path:
    path = save(fitted, tmp_path / "debiaser.json")
    document = json.loads(path.read_text())
    edit(document)
    path.write_text(json.dumps(document))
    return path


def _fitted_state(d: dict) -> dict:
    return d["state"]["fitted"]


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d.__setitem__("class", "judgebias.studies.mmb.estimator.MultimodalBayesianEnsemble"),
     "class 'judgebias.studies.mmb.estimator.MultimodalBayesianEnsemble' is not a trusted "
     "saved estimator"),
    (lambda d: d.__setitem__("class", "subprocess.Popen"), "is not a trusted saved estimator"),
    (lambda d: _fitted_state(d)["weights_"]["$array"].__setitem__("shape", [3, 5]),
     "state.fitted.weights_: the data does not have the shape it states"),
    (lambda d: _fitted_state(d)["top_prompts_"]["$array"]["data"].reverse(),
     "top_prompts_ disagree with weights_"),
    (lambda d: _fitted_state(d)["instructions_"]["$array"].update(
        shape=[3], data=_fitted_state(d)["instructions_"]["$array"]["data"][:3]),
     "weights_, instructions_ and n_features_in_ disagree"),
    (lambda d: d["state"]["audit"]["audit_correct_"]["$array"]["data"].pop(),
     "the data does not have the shape it states"),
    (lambda d: d["state"]["params"].__setitem__("tau", -1.0), "tau must be a positive"),
    (lambda d: d["state"]["params"].__setitem__("exec", "print(1)"), "unexpected keyword"),
])
def test_an_untrusted_or_inconsistent_file_is_refused_by_name(fitted, tmp_path: Path, edit,
                                                              message: str) -> None:
    path = _tampered(fitted, tmp_path, edit)
    with pytest.raises(SavedFileError) as error:
        judgebias.load(path)
    assert str(error.value).startswith(f"{path}: ") and message in str(error.value)


# -------------------------------------------------------------------------------------
# through the pipeline
# -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def saved_project(tmp_path_factory, default_params) -> tuple[Path, dict]:
    """A small MMB project (helpers.project.small_mmb: K in {1, 2}, the report's cell 5
    prompts x 4 validation pairs at K = 2) run up to the de-biaser and the factorial, with
    the params each step reads recorded."""
    from judgebias.studies.mmb.tables import factorial_path, saved_path
    from judgebias.workflow.paramsread import RECORD_ENV

    params = study_params(default_params, "mmb")
    small_mmb(params)
    root = tmp_path_factory.mktemp("mmb-saved")
    (root / "project").mkdir()
    project = make_project(root / "project", params)
    assert job("mmb_save", judge=JUDGE) in planned_jobs(project)  # a default target
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(RECORD_ENV, str(root / "reads"))  # the params each step reads
        run([str(BIN / "snakemake"), "--cores", "2", "--quiet", "all", "--",
             saved_path(JUDGE), factorial_path(JUDGE)], project)
    assert undeclared_reads(project, root / "reads", every_step=False) == {}
    return project, params


@pytest.mark.slow  # the small MMB pipeline up to the factorial: ~30 s
def test_the_save_rule_fits_the_reported_cell_as_the_factorial_does(saved_project) -> None:
    """The saved de-biaser is the factorial's configuration at mmb.report's cell in its
    first replicate: the same instructions, validation pairs and clusters; on the audit's
    test pairs it scores what the factorial's row scores, and its card and audit arrays
    are what its own predictions give there."""
    from judgebias.io.artifacts import read_table
    from judgebias.studies.mmb.measures.factorial import prompt_order, validation_order
    from judgebias.studies.mmb.measures.factorial_inputs import factorial_inputs
    from judgebias.studies.mmb.measures.metrics import batch_metrics
    from judgebias.studies.mmb.params import MmbParams
    from judgebias.studies.mmb.tables import (
        CLUSTERS_PATH,
        EMBEDDINGS,
        EMBEDDINGS_PATH,
        INSTRUCTIONS_PATH,
        JUDGEMENTS,
        PAIRS,
        PAIRS_PATH,
        factorial_path,
        judgements_path,
        read_pool,
        saved_path,
    )

    project, params = saved_project
    est = judgebias.load(project / saved_path(JUDGE))
    card = judgebias.load_card(project / saved_path(JUDGE))
    mmb = MmbParams.from_params(params)
    cell = mmb.report
    inputs = factorial_inputs(mmb, read_table(project / PAIRS_PATH, PAIRS),
                              read_pool(project / INSTRUCTIONS_PATH),
                              read_table(project / judgements_path(JUDGE), JUDGEMENTS),
                              pd.read_parquet(project / CLUSTERS_PATH))
    split = inputs.hps
    subset = prompt_order(0, len(inputs.pool))[:cell.n_prompts]
    val = validation_order(0, len(split.y_pool))[:cell.n_val]
    assert est.instructions_.tolist() == [inputs.pool[i] for i in subset]
    assert est.instruction_texts_.tolist() == [inputs.pool_texts[i] for i in subset]
    candidates = inputs.hps_pairs.iloc[:len(split.y_pool)]
    assert card["fit"]["validation_pairs"] == candidates["pair_id"].iloc[val].tolist()
    assert (est.n_validation_, est.n_clusters_, est.tau) == (cell.n_val, cell.k,
                                                             mmb.clustering.tau)
    assert est.probability == {"source": "logprobs", "order": mmb.order}
    assert est.embedding == {key: getattr(mmb.embedding, key) for key in (
        "architecture", "pretrained", "checkpoint", "init_seed", "image_size")}
    assert est.judge == JUDGE and est.judge_prompt == mmb.prompt

    table = read_table(project / EMBEDDINGS_PATH, EMBEDDINGS)
    vectors = dict(zip(table["image_path"], table["embedding"], strict=True))
    tests = inputs.hps_pairs.iloc[len(split.y_pool):]
    kw = {"embeddings_a": np.stack([vectors[p] for p in tests["image_a"]]),
          "embeddings_b": np.stack([vectors[p] for p in tests["image_b"]])}
    # its clusters are the factorial's: the same p(z | pair), to float32 cosines
    np.testing.assert_allclose(est.responsibilities(**kw), split.R_test[(cell.k, 0)],
                               atol=1e-4)
    p = est.predict_proba(split.P_test[:, subset], **kw)[:, 1]
    mine = batch_metrics(p[None, :], split.y_test, n_bins=mmb.design.calibration_bins)
    runs = pd.read_parquet(project / factorial_path(JUDGE))
    row = runs[(runs["method"] == "MMB") & (runs["k"] == cell.k) & (runs["cluster_seed"] == 0)
               & (runs["train_seed"] == 0) & (runs["sampling_seed"] == 0)
               & (runs["n_prompts"] == cell.n_prompts) & (runs["n_val"] == cell.n_val)]
    assert len(row) == 1
    for name in ("accuracy", "ece", "mce", "brier", "nll", "auc_pr"):
        assert mine[name][0] == pytest.approx(row[name].iloc[0], abs=1e-8), name
        assert card["agreement_test"][name] == mine[name][0], name  # its own predictions
    assert card["agreement_test"]["n"] == len(split.y_test) == len(est.audit_correct_)
    assert est.audit_confidence_.tobytes() == np.maximum(p, 1 - p).tobytes()
    np.testing.assert_array_equal(est.audit_correct_, (p >= 0.5) == (split.y_test == 1))
    assert est.audit_groups_.tolist() == tests["group"].tolist()


@pytest.mark.slow
def test_the_card_says_what_was_fitted_on_what(saved_project) -> None:
    from judgebias.studies.mmb.tables import saved_path

    project, params = saved_project
    card = judgebias.load_card(project / saved_path(JUDGE))
    assert card["simulated"] and card["judge"]["backend"] == "sim"
    assert card["judge"]["model"] == JUDGE and card["judge"]["prompt"] == "mmb_pairwise"
    assert card["dataset"]["name"] == "synthetic"
    assert card["dataset"]["pairs"]["test"] == card["agreement_test"]["n"] == 12
    assert card["dataset"]["usable"]["failed_answers"] == 0
    report = params["mmb"]["report"]
    assert card["fit"]["cell"] == {"n_prompts": report["n_prompts"], "n_val": report["n_val"]}
    assert card["fit"]["k"] == report["k"] and card["fit"]["replicate"] == {
        "train_seed": 0, "sampling_seed": 0, "cluster_seed": 0}
    assert [i["id"] for i in card["fit"]["instructions"]] == judgebias.load(
        project / saved_path(JUDGE)).instructions_.tolist()
    assert sum(len(i["top_in_clusters"]) for i in card["fit"]["instructions"]) == report["k"]
    assert "RANDOM weights" in card["embedding"]["description"]
    assert card["agreement_test"]["calibration_bins"] == 15


@pytest.mark.slow
def test_the_save_rule_reruns_for_its_own_keys_only(saved_project) -> None:
    """The report's K reruns the de-biaser and nothing upstream of it; the factorial's
    sampling seeds rerun the factorial, not the de-biaser."""
    project, params = saved_project
    save_job, factorial_job = job("mmb_save", judge=JUDGE), job("mmb_factorial", judge=JUDGE)
    upstream = {"mmb_data", "mmb_pool", "mmb_judge", "mmb_embed", "mmb_cluster"}
    changed = json.loads(json.dumps(params))
    changed["mmb"]["report"]["k"] = 1
    write_params(project, changed)
    planned = planned_jobs(project)
    assert planned[save_job] == 1 and not upstream & {rule for rule, _ in planned}
    changed = json.loads(json.dumps(params))
    changed["mmb"]["design"]["sampling_seeds"] = 3
    write_params(project, changed)
    planned = planned_jobs(project)
    assert planned[factorial_job] == 1 and save_job not in planned
    write_params(project, params)
