"""What DVC shows people (issue 42 item 7): which outputs are DVC metrics, and the papers'
curves as DVC data-series plots.

Every output of every job used to be in DVC's views: each JSON file under results/ was a
metric (832 numbers at the default, `dvc metrics show` 30,054 characters wide) and no
curve was a plot, so `dvc plots diff` could not compare two runs' curves. Now a rule
says, on the output itself, what DVC shows of it, and judgebias.workflow.dvc_export
writes exactly that into dvc.yaml:

* ``dvc_metric(path)``: a DVC metric. Only the judge card's headline cells are
  (judgebias.card.build.write_headline: one file per headline measure, one number per
  judge); every other JSON file is a plain, cached output.
* ``Curve.output(path, panel)``: a CSV of one curve panel (the paper's figure's, for one
  judge), declared under dvc.yaml's top-level ``plots:`` with its x, y, template and
  titles (DVC's documented syntax: a plot whose id is the file's path, ``y`` a list of
  its columns, each a line), so ``dvc plots show`` and ``dvc plots diff`` draw it. The
  step that draws the figure writes it (``write_curve``).

Both are Snakemake output flags (``snakemake.io.flag``, as ``temp()`` and ``directory()``
are), so the rule names a file and what DVC shows of it in one place, and the export
reads them from the jobs' outputs. Snakemake ignores flags it does not know: a flag never
changes what a job runs or when.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgebias.io.artifacts import write_text

if TYPE_CHECKING:
    import pandas as pd

METRIC_FLAG = "judgebias_dvc_metric"  # the output is a DVC metric
PLOT_FLAG = "judgebias_dvc_plot"  # the output is a DVC data-series plot; its value the props


def dvc_metric(path: Any) -> Any:
    """`path` (a rule's output, flagged or not) marked as a DVC metric."""
    from snakemake.io import flag

    return flag(path, METRIC_FLAG)


@dataclass(frozen=True)
class Curve:
    """A figure's curve as DVC draws it: a CSV with column `x` and one line per column
    of `y`, drawn with DVC's built-in `template` ("linear": lines; "scatter": points)."""

    x: str
    y: tuple[str, ...]
    title: str
    x_label: str
    y_label: str
    template: str = "linear"

    def props(self, panel: str) -> dict[str, Any]:
        """The plot's definition in dvc.yaml, its title naming `panel` (e.g. the judge)."""
        return {"x": self.x, "y": list(self.y), "template": self.template,
                "title": f"{self.title}, {panel}", "x_label": self.x_label,
                "y_label": self.y_label}

    def output(self, path: str, panel: str) -> Any:
        """`path`, a rule's output, marked as this curve's plot for `panel`."""
        from snakemake.io import flag

        return flag(path, PLOT_FLAG, self.props(panel))


def write_curve(rows: pd.DataFrame, curve: Curve, path: str | Path) -> None:
    """`rows`' columns `curve.x` and `curve.y` as CSV, atomically; a line `rows` lacks is
    an empty column, and no rows the header alone (a judge the study left out)."""
    write_text(rows.reindex(columns=[curve.x, *curve.y]).to_csv(index=False), path)
