"""The `pomms:` params block, declared once: its typed view (judgebias.paramsblock).

Each field of :class:`PommsParams` is a key of the block, with its type, default, bounds
and description (the docstring below it); a judgement dataset's block is
:class:`JudgementDataset`. The block's JSON schema, the view its steps receive
(judgebias.workflow.step_dispatch passes it to a step argument annotated with it) and the
keys its rules declare (``block_keys``) all come from it. The fields marked ``derived()``
are computed from other keys: the few ``philautia:`` values Pomms builds on (its rule
declares the same keys). What the schema cannot express is checked in ``validate``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from judgebias.abilities import Need
from judgebias.config import path_errors
from judgebias.paramsblock import block_values, derived, key, view
from judgebias.studies.philautia.params import NAME_PATTERN, Setting, settings_of
from judgebias.study import simulated_models, study_models


def judgement_setting(pomms: Mapping[str, Any]) -> str:
    """The philautia setting that scores the judgement datasets: ``judgement_setting``,
    or ``setting`` when it is null (one setting for both, as before the key existed)."""
    return pomms.get("judgement_setting") or pomms["setting"]


@view
class JudgementDataset:
    """One caption-judgement dataset, one row per human rating (item, image, candidate
    caption, references, human score, split)."""

    format: Literal["synthetic", "flickr8k_expert", "nebula", "table"]
    """synthetic (simulated raters, offline), flickr8k_expert (the FLEUR-format JSON),
    nebula (the EXPERT-format JSON) or table (CSV/Parquet with image_id, candidate,
    references, human_score, split)."""
    path: str | None = key(absent=True)
    """The dataset file (flickr8k_expert / nebula JSON, or a CSV/Parquet table)."""
    image_dir: str | None = None
    """Folder with the images; without it items cannot be judged by an MLLM."""
    missing: Literal["error", "skip"] = "error"
    """An image file that is absent: error stops the import, skip drops the affected
    items; either way they are listed by name."""
    split: str = "test"
    """nebula only -- which split the file holds."""
    n_items: int | None = key(absent=True, ge=10)
    """synthetic: the items to simulate (required). An imported format: the file's
    published item count (Flickr8k-Expert 5,664; Nebula 32,978 over its three splits),
    which `judgebias plan` counts from while the file is not downloaded yet; the file,
    once there, is counted exactly."""
    seed: int = 0
    """synthetic only: seeds the items and the raters."""
    n_raters: int = key(3, ge=1)
    """synthetic only: simulated raters per caption."""
    rater_noise: float = key(0.1, ge=0)
    """synthetic only: the sd of each rating around the caption's true accuracy (ratings
    clipped to [0, 1])."""


@view
class PommsParams:
    """Seed 000 §4.2/§6.3 -- an ensemble of the panel's evaluators fitted to human
    judgements."""

    PARAMS_KEY: ClassVar[str] = "pomms"

    # key(): pydantic lists the required fields given a Field first; so `required` keeps
    # the declaration order (setting, train_dataset, datasets)
    setting: str = key()
    """The philautia setting whose Phi-tilde gets the Pomms column and gives the
    philautia scores (seed 000 Table 1: Fig. 4 (ii), reference-free)."""
    judgement_setting: str | None = None
    """The philautia setting (prompt, references) that scores the judgement datasets for
    tau; null = `setting`. G-VEval scores Flickr8k-Expert with its reference prompt."""
    train_dataset: str = key()
    """Its train split fits, its val split selects members."""
    datasets: dict[str, JudgementDataset] = key(names=NAME_PATTERN, min_length=1)
    """The caption-judgement datasets (human ratings of candidate captions), by a name of
    your choice; every panel judge scores each."""
    max_features: int | None = key(None, ge=1)
    """The largest ensemble the forward selection considers; null: every panel
    evaluator."""
    alpha: float = key(0.001, gt=0)
    """Elastic Net penalty of the meta-learner (scikit-learn's ElasticNet), on scores in
    [0, 1]."""
    l1_ratio: float = key(0.5, ge=0, le=1)
    """Elastic Net mixing parameter (1: lasso, 0: ridge)."""
    positive: bool = False
    """Constrain the Elastic Net's coefficients to be non-negative."""
    scoring: Literal["tau_b", "tau_c"] = "tau_b"
    """The Kendall tau variant the forward selection (and select: best_validation)
    maximises on the validation split."""
    select: Literal["best_validation", "min_philautia"] = "min_philautia"
    """How many SFS steps make the ensemble: best validation tau, or (seed 000 §6.3,
    Table 2's Pomms (iv)) the smallest absolute philautia score."""
    min_members: int = key(2, ge=1)
    """Smallest ensemble `select` may choose; seed 000 Table 1's Pomms rows start at two
    members, and a one-member ensemble's philautia score is a single judge's own."""
    n_bootstrap: int = key(2000, ge=0)
    """Resamples of the image-cluster bootstrap behind each Kendall tau's 95% interval and
    its test of tau = 0 in the agreement table (judgebias.stats.agreement); 0: estimates
    only."""
    seed: int = 0
    """Seeds that bootstrap."""
    judged_with: str = derived()
    """The philautia setting that scores the judgement datasets: ``judgement_setting``,
    or ``setting`` where it is null (`judgement_setting`)."""
    models: tuple[str, ...] = derived()
    """The panel models Pomms selects from: philautia's (judgebias.study.study_models)."""
    score: str = derived()
    """``philautia.score``: which score of an answer is read."""
    ddof: int = derived()
    """``philautia.ddof``: Phi-tilde's standardisation."""
    settings: Mapping[str, Setting] = derived()
    """``philautia.settings``: the evaluation settings by name (a judgement dataset is
    scored with one of them, its prompt and whether it is given the references)."""
    simulated: frozenset[str] = derived()
    """The models that are simulated (figures flag them)."""

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> PommsParams:
        """The view of validated `params` (the schema filled every default in)."""
        philautia = params["philautia"]
        models = study_models(params, "pomms")
        return cls(**block_values(params, "pomms"),
                   judged_with=judgement_setting(params["pomms"]), models=tuple(models),
                   score=philautia["score"], ddof=philautia["ddof"],
                   settings=settings_of(philautia),
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
