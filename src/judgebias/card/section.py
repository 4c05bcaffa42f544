"""The report's first section: the judge card (judges x headline measures).

Each cell is an estimate with its interval (`judgebias.card.text.estimate_text`), linked to
the section of the study it comes from and coloured only where it is significant after
the card's FDR adjustment; a judge a study did not judge has an empty cell, never a zero.
Under the table, each judge's one-line reading (`judgebias.card.text.reading`), then
every row of the card.
"""

from __future__ import annotations

import pandas as pd

from judgebias.card.text import estimate_text, number, reading
from judgebias.report.html import Section, Table


def study_anchor(study: str) -> str:
    """The id of a study's report section, which card cells link to."""
    return f"study-{study}"


def _column(row: pd.Series) -> tuple[str, str]:
    return (row["study"], row["label"] + (f" [{row['setting']}]" if row["setting"] else ""))


def compact_table(card: pd.DataFrame, models: list[str]) -> Table:
    """Judges x headline measures (studies in registry order): text, links and colours of
    every cell."""
    from judgebias.study import registered

    order = {name: k for k, name in enumerate(registered())}
    heads = card[card["headline"]]
    heads = heads.iloc[heads["study"].map(order).fillna(len(order)).argsort(kind="stable")]
    columns = pd.MultiIndex.from_tuples(list(dict.fromkeys(_column(r) for _, r in
                                                           heads.iterrows())))
    text = pd.DataFrame("", index=pd.Index(models, name="judge"), columns=columns,
                        dtype=object)
    links, classes = text.copy(), text.copy()
    for _, row in heads.iterrows():
        cell = (row["model"], _column(row))
        text.loc[cell] = estimate_text(row) + (" *" if row["significant"] else "")
        links.loc[cell] = "#" + study_anchor(row["study"])
        classes.loc[cell] = "significant" if row["significant"] else ""
    text = text.mask(text == "", None)
    return Table(text, "The judge card: each headline measure with its 95% interval "
                 "(* and coloured: significant after Benjamini-Yekutieli FDR over every "
                 "test on the card; an empty cell: the study did not judge that model). "
                 "Each cell links to its study's section.",
                 links=links, classes=classes)


def readings_table(card: pd.DataFrame, models: list[str]) -> Table:
    frame = pd.DataFrame({"reading": [reading(card, m) for m in models]},
                         index=pd.Index(models, name="judge"))
    return Table(frame, "Each judge in one line, generated from the card's significant "
                 "rows (and the fixes that helped it significantly).")


def full_table(card: pd.DataFrame) -> Table:
    frame = pd.DataFrame({
        "study": card["study"],
        "measure": [label + (f" [{s}]" if s else "") for label, s in
                    zip(card["label"], card["setting"], strict=True)],
        "estimate [95% CI]": [estimate_text(r) for _, r in card.iterrows()],
        "unit": card["unit"],
        "chance": [None if pd.isna(c) else number(c) for c in card["chance"]],
        "test": card["test"],
        "p (BY)": card["p_adjusted"],
        "n": card["n"],
        "note": card["note"],
    })
    frame.index = pd.Index(card["model"], name="judge")
    classes = pd.DataFrame("", index=frame.index, columns=frame.columns)
    classes["estimate [95% CI]"] = card["significant"].map({True: "significant",
                                                            False: ""}).to_numpy()
    return Table(frame, "Every measure on the card, with the test behind it and its "
                 "p-value adjusted over the whole card.", float_fmt="{:.3g}",
                 classes=classes)


def card_section(card: pd.DataFrame, models: list[str]) -> Section:
    """The card as the report's first section."""
    models = [m for m in models if m in set(card["model"])]
    return Section(
        title="Judge card",
        anchor="judge-card",
        headline=" ".join(f"{m}: {reading(card, m)}" for m in models[:3])
        + (" (more judges below)" if len(models) > 3 else ""),
        intro=("One audit of each judge across every study. Each number is one of the "
               "studies' own estimates with its interval and test; the p-values are "
               "adjusted together (Benjamini-Yekutieli, which holds under the dependence "
               "between measures computed from the same answers)."),
        tables=[compact_table(card, models), readings_table(card, models)],
        subsections=[Section(title="Every measure on the card", anchor="judge-card-rows",
                             tables=[full_table(card)])],
    )
