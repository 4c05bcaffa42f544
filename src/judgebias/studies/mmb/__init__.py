"""MMB (seed 002): calibrating a pairwise text-to-image judge with Bayesian prompt
ensembles whose weights depend on image clusters. Every (pair, instruction) is judged once;
CLIP embeddings are clustered with FAISS spherical k-means; STD, BEST, AVG, BPE and MMB are
then fitted for every configuration of the paper's factorial design as pure computation.
Each judge's MMB at the report's cell is saved for new image pairs (steps.save)."""

from judgebias.study import Study

STUDY = Study(
    name="mmb",
    title="MMB: calibrating a pairwise image judge with multimodal Bayesian prompt ensembles",
    package=__name__,
    rules="workflow/rules/mmb.smk",
    has=("gpus",),
    view="MmbParams",
    # results/mmb/<judge>/debiaser.json (steps.save), read by judgebias.load
    saved=("estimator:ClusteredBayesianEnsemble",),
)
