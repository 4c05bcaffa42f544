# Philautia-Eval (seed 000 §4.1, Algorithm 1): captions per generator, scores per
# evaluator x generator x setting, then Phi, Phi-tilde / philautia scores and figures.
from judgebias.paramsblock import block_keys
from judgebias.studies.philautia.data import dataset_files
from judgebias.study import study_models
from judgebias.studies.philautia import tables as philautia
from judgebias.studies.philautia.params import PhilautiaParams, models_key, setting_prompt_id

PHILAUTIA_MODELS = study_models(PARAMS, "philautia")
SETTINGS = list(PARAMS["philautia"]["settings"])
# philautia.waves.count > 1: score jobs per wave, a look after each (issue 45)
WAVES = philautia.wave_count(PARAMS)
WAVE = "{wave}" if WAVES > 1 else None

wildcard_constraints:
    generator="|".join(PHILAUTIA_MODELS),
    evaluator="|".join(PARAMS["panel"]),
    setting="|".join(SETTINGS),
    wave="[1-9][0-9]*",


MODELS_KEY = models_key(PARAMS)
PHI_KEYS = [MODELS_KEY, *block_keys(PhilautiaParams, only=("score",))]
FAMILY_KEYS = [
    *[f"panel.{m}.family" for m in PHILAUTIA_MODELS],
    # optional (no schema default): declared only where params.yaml states it
    *[f"panel.{m}.also_in" for m in PHILAUTIA_MODELS if "also_in" in PARAMS["panel"][m]],
]
ANALYSIS_KEYS = [
    MODELS_KEY,
    *block_keys(PhilautiaParams, only=("ddof", "n_bootstrap", "n_permutations", "ci", "seed")),
    *FAMILY_KEYS,
]
# the scores and the philautia scores it sits next to come from its inputs
SELFPREF_KEYS = [MODELS_KEY, *block_keys(PhilautiaParams, only=("ci",)), *FAMILY_KEYS]
# which images a wave holds; the look decides from the scores with the whole design
WAVE_KEYS = ["philautia.waves.count", "philautia.waves.seed"] if WAVES > 1 else []
LOOK_KEYS = [*SELFPREF_KEYS, *block_keys(PhilautiaParams, only=("score", "waves"))]


def previous_look(wildcards):
    """The look a wave's jobs wait for: none for wave 1, or without waves."""
    wave = int(getattr(wildcards, "wave", 1))
    return [philautia.look_path(wildcards.setting, wave - 1)] if wave > 1 else []


def setting_scores(setting, waves=WAVES):
    """A setting's score tables: every evaluator x generator (x wave, up to `waves`)."""
    return [philautia.scores_path(setting, e, g, str(w) if WAVES > 1 else None)
            for w in range(1, waves + 1) for e in PHILAUTIA_MODELS for g in PHILAUTIA_MODELS]
PHILAUTIA_FIGURE_KEYS = [MODELS_KEY, *figure_keys(PHILAUTIA_MODELS)]


rule dataset:
    input:
        # unnamed: the imported files, images included, are dependencies, read through
        # their params keys (listed when the job is planned, not at every read of the rules)
        lambda w: dataset_files(PARAMS["philautia"]["dataset"]),
        code=step_code("philautia.dataset"),
    output:
        table=philautia.DATASET_TABLE,
        images=directory(philautia.DATASET_IMAGES),
    params:
        **step_params(block_keys(PhilautiaParams, only=("dataset",))),
    log:
        "logs/dataset.log",
    shell:
        step("philautia.dataset")


rule caption:
    input:
        images=philautia.DATASET_TABLE,
        code=step_code("philautia.caption"),
        prompt=template(PARAMS["philautia"]["caption_prompt"]),
    output:
        captions=philautia.captions_path("{generator}"),
    params:
        **step_params(lambda w: model_keys(
            w.generator, "generator", *block_keys(PhilautiaParams, only=("caption_prompt",)))),
    resources:
        **model_resources("generator"),
    log:
        "logs/caption/{generator}.log",
    shell:
        step("philautia.caption")


rule score:
    input:
        images=philautia.DATASET_TABLE,
        captions=philautia.captions_path("{generator}"),
        code=step_code("philautia.score"),
        prompt=lambda w: template(setting_prompt_id(PARAMS, w.setting)),
        previous=previous_look,
    output:
        scores=philautia.scores_path("{setting}", "{evaluator}", "{generator}", WAVE),
    params:
        **step_params(lambda w: model_keys(w.evaluator, "evaluator",
                                           f"philautia.settings.{w.setting}", *WAVE_KEYS)),
    resources:
        **model_resources("evaluator"),
    log:
        "logs/score/{setting}/" + ("wave-{wave}/" if WAVE else "") + "{evaluator}/{generator}.log",
    shell:
        step("philautia.score")


rule phi:
    input:
        scores=lambda w: setting_scores(w.setting),
        code=step_code("philautia.phi"),
    output:
        long=philautia.setting_file("{setting}", "scores"),
        phi=philautia.setting_file("{setting}", "phi"),
        counts=philautia.setting_file("{setting}", "counts"),
    params:
        **step_params(PHI_KEYS),
    log:
        "logs/phi/{setting}.log",
    shell:
        step("philautia.phi")


rule philautia:
    input:
        scores=philautia.setting_file("{setting}", "scores"),
        code=step_code("philautia.philautia"),
    output:
        metrics=philautia.setting_file("{setting}", "metrics", ".json"),
        tables=[philautia.setting_file("{setting}", t) for t in philautia.ANALYSIS_TABLES],
    params:
        **step_params(ANALYSIS_KEYS),
    log:
        "logs/philautia/{setting}.log",
    shell:
        step("philautia.philautia")


if WAVES > 1:
    rule look:
        input:
            scores=lambda w: setting_scores(w.setting, int(w.wave)),
            images=philautia.DATASET_TABLE,
            previous=previous_look,
            code=step_code("philautia.look"),
        output:
            look=philautia.look_path("{setting}", "{wave}"),
        params:
            **step_params(LOOK_KEYS),
        log:
            "logs/look/{setting}/{wave}.log",
        shell:
            step("philautia.look")


rule selfpref:
    input:
        scores=philautia.setting_file("{setting}", "scores"),
        philautia=philautia.setting_file("{setting}", "philautia"),
        look=lambda w: [philautia.look_path(w.setting, WAVES)] if WAVES > 1 else [],
        code=step_code("philautia.selfpref"),
    output:
        selfpref=philautia.setting_file("{setting}", philautia.SELFPREF_TABLE),
    params:
        **step_params(SELFPREF_KEYS),
    log:
        "logs/selfpref/{setting}.log",
    shell:
        step("philautia.selfpref")


rule heatmaps:
    input:
        phi=philautia.setting_file("{setting}", "phi"),
        phi_tilde=philautia.setting_file("{setting}", "phi_tilde"),
        philautia=philautia.setting_file("{setting}", "philautia"),
        code=step_code("philautia.heatmaps"),
    output:
        figures=[philautia.figure_path("{setting}", f) for f in philautia.FIGURES],
    params:
        **step_params(PHILAUTIA_FIGURE_KEYS),
    log:
        "logs/heatmaps/{setting}.log",
    shell:
        step("philautia.heatmaps")


TARGETS.extend(philautia.setting_file(s, "metrics", ".json") for s in SETTINGS)
TARGETS.extend(philautia.setting_file(s, philautia.SELFPREF_TABLE) for s in SETTINGS)
