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
    has=("warnings", "gpus", "sim_images"),
    # its report also reads the paper presets' table when they run: presets.py knows
    # that, and tables.py cannot import it without every FRAME job depending on it
    targets={"report_inputs": "presets:report_inputs"},
    view="FrameParams",
)
