"""The `pomms:` params block: the checks its schema cannot express, and the typed view
its steps receive (judgebias.workflow.step_dispatch passes `PommsParams` to a step whose ``params``
argument is annotated with it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from judgebias.abilities import Need
from judgebias.config import path_errors
from judgebias.study import simulated_models, study_models


def judgement_setting(pomms: Mapping[str, Any]) -> str:
    """The philautia setting that scores the judgement datasets: ``judgement_setting``,
    or ``setting`` when it is null (one setting for both, as before the key existed)."""
    return pomms.get("judgement_setting") or pomms["setting"]


@dataclass(frozen=True)
class PommsParams:
    """The validated ``pomms:`` block as Pomms' steps read it, resolved once, with the
    few ``philautia:`` values Pomms builds on (its rule declares the same keys).

    Attributes
    ----------
    setting : str
        The philautia setting whose Phi-tilde gets the Pomms column.
    judgement_setting : str
        The philautia setting that scores the judgement datasets, resolved
        (`judgement_setting`: ``setting`` when the block's is null).
    train_dataset : str
        The judgement dataset Pomms is fitted (train split) and selected (val split) on.
    datasets : Mapping of str to Mapping
        Every ``datasets.<name>`` block as validated (judgebias.studies.pomms.data reads it).
    max_features, alpha, l1_ratio, positive, scoring, select, min_members
        The estimator's settings (judgebias.studies.pomms.estimator.Pomms).
    n_bootstrap, seed : int
        The image-cluster bootstrap of the agreement table's tau intervals and tests.
    models : tuple of str
        The panel models Pomms selects from: philautia's (judgebias.study.study_models).
    score : {"expected", "parsed"}
        ``philautia.score``: which score of an answer is read.
    ddof : int
        ``philautia.ddof``: Phi-tilde's standardisation.
    simulated : frozenset of str
        The models that are simulated (figures flag them).
    """

    setting: str
    judgement_setting: str
    train_dataset: str
    datasets: Mapping[str, Mapping[str, Any]]
    max_features: int | None
    alpha: float
    l1_ratio: float
    positive: bool
    scoring: str
    select: str
    min_members: int
    n_bootstrap: int
    seed: int
    models: tuple[str, ...]
    score: str
    ddof: int
    simulated: frozenset[str]

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> PommsParams:
        block, philautia = params["pomms"], params["philautia"]
        models = study_models(params, "pomms")
        return cls(
            setting=block["setting"], judgement_setting=judgement_setting(block),
            train_dataset=block["train_dataset"], datasets=block["datasets"],
            max_features=block["max_features"], alpha=block["alpha"],
            l1_ratio=block["l1_ratio"], positive=block["positive"],
            scoring=block["scoring"], select=block["select"],
            min_members=block["min_members"], n_bootstrap=block["n_bootstrap"],
            seed=block["seed"], models=tuple(models),
            score=philautia["score"], ddof=philautia["ddof"],
            simulated=frozenset(simulated_models(params, models)))


def validate(params: Mapping[str, Any]) -> list[str]:
    """A known philautia setting and training dataset, and every dataset file and image
    folder it names (that the philautia block exists, Study.requires checks)."""
    pomms = params["pomms"]
    errors = []
    settings = params["philautia"]["settings"]
    if pomms["setting"] not in settings:
        errors.append(f"pomms.setting: {pomms['setting']!r} is not a philautia setting "
                      f"(defined: {', '.join(settings)})")
    if pomms.get("judgement_setting") and pomms["judgement_setting"] not in settings:
        errors.append(f"pomms.judgement_setting: {pomms['judgement_setting']!r} is not a "
                      f"philautia setting (defined: {', '.join(settings)})")
    if pomms["train_dataset"] not in pomms["datasets"]:
        errors.append(f"pomms.train_dataset: {pomms['train_dataset']!r} is not defined under "
                      "pomms.datasets")
    for name, spec in pomms["datasets"].items():
        where = f"pomms.datasets.{name}"
        needed = ["n_items"] if spec["format"] == "synthetic" else ["path"]
        missing = [key for key in needed if key not in spec]
        errors += [f"{where}.{key}: required for format {spec['format']!r}" for key in missing]
        if spec["format"] != "synthetic" and not missing:
            path_what, images_what = DOWNLOADS.get(spec["format"], ("", ""))
            errors += path_errors(f"{where}.path", spec["path"], what=path_what)
            errors += path_errors(f"{where}.image_dir", spec["image_dir"], directory=True,
                                  what=images_what)
    return errors


# What belongs at an imported judgement dataset's `path` and `image_dir`, and where to get
# it (seed 000 §6.3, Appendix A.2), for `judgebias validate` to say beside a path that does
# not exist yet (configs/philautia_eval.yaml ships placeholders). docs/studies/pomms.md
# ("Human judgements and agreement") gives the formats.
DOWNLOADS = {
    "flickr8k_expert": (
        "Flickr8k-Expert's judgements in FLEUR's format (16,992 expert ratings of 5,664 "
        "captions): annotations/flickr8k.json of https://github.com/Yebin46/FLEUR",
        "the Flickr8k images (Flickr8k_Dataset, Hodosh et al. 2013: 8,091 JPEGs; "
        "Flickr8k-Expert rates captions of 1,000 of them)"),
    "nebula": (
        "one Nebula split in EXPERT's format: annotations/nebula_<split>.json of "
        "https://github.com/hjkim811/EXPERT (test: 3,298 candidates)",
        "the Nebula images (Matsuda et al. 2024, DENEB; the dataset's own release)"),
    "table": (
        "a judgement table (CSV or Parquet: image_id, candidate, references, human_score, "
        "split, optional image_file; e.g. Nebula's three splits, 26,382 / 3,298 / 3,298, "
        "converted from EXPERT's annotations/nebula_{train,val,test}.json)",
        "the folder the table's image_file names are relative to (Nebula: its images, "
        "Matsuda et al. 2024, DENEB)"),
}


def needs(params: Mapping[str, Any]) -> list[Need]:
    """Pomms' judges score the judgement datasets' captions (one image) the way philautia
    scores: with its ``score: expected`` they need the score token's log-probs."""
    expected = params["philautia"]["score"] == "expected"
    return [Need("pomms", "judge", study_models(params, "pomms"), images_per_request=1,
                 answer_logprobs=expected,
                 why={"answer_logprobs": "philautia.score: expected weighs the score by them"},
                 fallback="philautia.score: parsed, or leave the model out of "
                          "philautia.models")]
