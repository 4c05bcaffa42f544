"""FRAME (seed 004): do visual manipulations inflate LVLM judges' text-to-image alignment
scores? A benchmark built by the §4.1 pipeline (or imported), the eight manipulations of
Table 1 over the grids of Appendix B.3, every image scored by every judge (journaled),
then Tables 2-7 and 9-12 and Figs. 2-3 as pure computation, with the paper's in-sample
numbers next to cross-fitted ones (spec frame.md)."""

from judgebias.study import Study

STUDY = Study(
    name="frame",
    title="FRAME: visual manipulations that inflate LVLM judges' scores",
    package=__name__,
    rules="workflow/rules/frame.smk",
    gpus=f"{__name__}.tables:gpu_need",
    validate=f"{__name__}.params:validate",
    needs=f"{__name__}.params:needs",
    warnings=f"{__name__}.params:warnings",
    plan=f"{__name__}.plan:planned_calls",
    power=f"{__name__}.plan:power_sizes",
    report=f"{__name__}.report:report_section",
    card=f"{__name__}.card:rows",
    card_inputs=f"{__name__}.card:inputs",
    sim=f"{__name__}.sim:TASKS",
    sim_images=f"{__name__}.imagegen:served_image",
)
