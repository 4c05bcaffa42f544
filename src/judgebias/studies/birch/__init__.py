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
    validate=f"{__name__}.params:validate",
    needs=f"{__name__}.params:needs",
    warnings=f"{__name__}.params:warnings",
    plan=f"{__name__}.plan:planned_calls",
    power=f"{__name__}.plan:power_sizes",
    report=f"{__name__}.report:report_section",
    card=f"{__name__}.card:rows",
    card_inputs=f"{__name__}.card:inputs",
    sim=f"{__name__}.sim:TASKS",
)
