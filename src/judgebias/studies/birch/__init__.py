"""BIRCH (seed 003): are pairwise VQA judges blind to the image and fooled by informative
but wrong answers, and does a truthful anchor help? Judges answer every pair with and
without the image, a labeller names the more informative answer (image withheld), and
Standard Ref, Image Caption and BIRCH judge against a self-written reference, caption or
anchor; IRS, IB, LB and their down-sampled spreads are then pure computation."""

from judgebias.study import Study

STUDY = Study(
    name="birch",
    title="BIRCH: image reliance, informativeness bias and the truthful anchor",
    package=__name__,
    rules="workflow/rules/birch.smk",
    has=("warnings",),
    view="BirchParams",
)
