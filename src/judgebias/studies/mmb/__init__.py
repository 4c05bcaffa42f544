"""MMB (seed 002): calibrating a pairwise text-to-image judge with Bayesian prompt
ensembles whose weights depend on image clusters. Every (pair, instruction) is judged once;
CLIP embeddings are clustered with FAISS spherical k-means; STD, BEST, AVG, BPE and MMB are
then fitted for every configuration of the paper's factorial design as pure computation."""

from judgebias.study import Study

STUDY = Study(
    name="mmb",
    title="MMB: calibrating a pairwise image judge with multimodal Bayesian prompt ensembles",
    package=__name__,
    rules="workflow/rules/mmb.smk",
    gpus=f"{__name__}.tables:gpu_need",
    validate=f"{__name__}.params:validate",
    needs=f"{__name__}.params:needs",
    plan=f"{__name__}.plan:planned_calls",
    power=f"{__name__}.plan:power_sizes",
    report=f"{__name__}.report:report_section",
    card=f"{__name__}.card:rows",
    card_inputs=f"{__name__}.card:inputs",
    sim=f"{__name__}.sim:TASKS",
)
