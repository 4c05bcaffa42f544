"""The report's first section: the judge card (judges x headline measures), in the
report package because it is HTML of the report's (judgebias.report.html), which the card
package, below the report, never imports.

Each cell is an estimate with its interval (`judgebias.card.text.estimate_text`), linked to
the section of the study it comes from and coloured only where it is significant after
the card's FDR adjustment; a judge a study did not judge has an empty cell, never a zero.
Above it, a sentence that counts each judge's significant findings (`headline`); under
the table, each judge's one-line reading (`judgebias.card.text.reading`), then
every row of the card, folded (`Section.fold`, issue 42): a full card is hundreds of rows,
and unfolded it put the first study section screens below the card. In the fold, the
rows with a number each keep their line; the rows a study could not estimate (no
estimate, interval, p-value or chance level: "not identified" and the like) are one line
per judge, each measure with its n and each reason once, instead of one "n/a" row each.
"""

from __future__ import annotations

import pandas as pd

from judgebias.card.schema import ALPHA
from judgebias.card.text import estimate_text, number, reading
from judgebias.report.html import Section, Table


def study_anchor(study: str) -> str:
    """The id of a study's report section, which card cells link to."""
    return f"study-{study}"


def _measure(row: pd.Series) -> str:
    """A row's measure for people: its label, and its setting in brackets."""
    return row["label"] + (f" [{row['setting']}]" if row["setting"] else "")


def _column(row: pd.Series) -> tuple[str, str]:
    return (row["study"], _measure(row))


def _registry_order(studies: pd.Series) -> pd.Series:
    """Each study's place in the registry (the order of the report's sections)."""
    from judgebias.study import registered

    order = {name: k for k, name in enumerate(registered())}
    return studies.map(order).fillna(len(order))


def estimated(card: pd.DataFrame) -> pd.Series:
    """Rows with a number beyond n (an estimate, an interval, a p-value or a chance
    level): those keep a line of their own in the table of every row."""
    return card[["estimate", "ci_low", "ci_high", "p_value", "chance"]].notna().any(axis=1)


def compact_table(card: pd.DataFrame, models: list[str]) -> Table:
    """Judges x headline measures (studies in registry order): text, links and colours of
    every cell."""
    heads = card[card["headline"]]
    heads = heads.iloc[_registry_order(heads["study"]).argsort(kind="stable")]
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
    """Every estimated row of the card (`estimated`), one line each, with its test."""
    card = card[estimated(card)]
    frame = pd.DataFrame({
        "study": card["study"],
        "measure": [_measure(row) for _, row in card.iterrows()],
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


def _unestimated_text(rows: pd.DataFrame) -> str:
    """One judge's measures of one study without an estimate, those with the same
    reason together and each reason once: "PC, PF: one order only (...). RS: ..."."""
    parts = []
    for note, group in rows.groupby("note", sort=False):
        names = ", ".join(_measure(row) + (f" (n {row['n']})" if row["n"] else "")
                          for _, row in group.iterrows())
        parts.append(f"{names}: {str(note).rstrip('.')}.")
    return " ".join(parts)


def unestimated_table(card: pd.DataFrame, models: list[str]) -> Table | None:
    """The rows the card could not estimate (not `estimated`), one line per judge and a
    column per study; None when every row has a number."""
    missing = card[~estimated(card)]
    if missing.empty:
        return None
    studies = missing["study"].iloc[_registry_order(missing["study"]).argsort(kind="stable")]
    frame = pd.DataFrame(None, index=pd.Index([m for m in models if m in set(missing["model"])],
                                              name="judge"),
                         columns=list(dict.fromkeys(studies)), dtype=object)
    for (model, study), rows in missing.groupby(["model", "study"], sort=False):
        frame.loc[model, study] = _unestimated_text(rows)
    return Table(frame, "The measures the card could not estimate, one line per judge: "
                 "each with the reason its study gives and, where any, the n behind it "
                 "(–: the judge has an estimate of every measure of that study, or the "
                 "study did not judge it).")


def _count(n: int, thing: str) -> str:
    """"1 row", "3 rows": a count with its noun."""
    return f"{n} {thing}{'' if n == 1 else 's'}"


def _fold_summary(card: pd.DataFrame) -> str:
    """What the fold of every row holds, counted, so a reader knows what a click shows."""
    n_estimated = int(estimated(card).sum())
    text = (f"Show every measure on the card ({_count(len(card), 'row')}): "
            f"{_count(n_estimated, 'estimate')}, each with its test, adjusted p-value and n")
    if n_estimated < len(card):
        text += (f", and {_count(len(card) - n_estimated, 'measure')} without an "
                 f"estimate, one line per judge with the reason")
    return text


def headline(card: pd.DataFrame, models: list[str]) -> str:
    """The card in a sentence: which judges have significant findings and how many.

    Counts, not the findings: each judge's findings are its reading, one line each in
    the table right under the card's, and repeating them here made the top of the
    report grow with every finding (issue 42)."""
    n_tests = int(card["p_value"].notna().sum())
    if not n_tests:
        return "No test of bias could be run on this panel."
    found = card[card["significant"] & (card["reading"] != "")]["model"].value_counts()
    scope = (f"(Benjamini-Yekutieli FDR {ALPHA:.0%} over the card's "
             f"{_count(n_tests, 'test')})")
    biased = [m for m in models if found.get(m, 0)]
    if not biased:
        return f"No judge has a significant finding {scope}."
    text = (f"{len(biased)} of {len(models)} judges {'has' if len(biased) == 1 else 'have'} "
            f"significant findings {scope}: " + ", ".join(f"{m} {found[m]}" for m in biased))
    clean = [m for m in models if m not in biased]
    if clean:
        text += "; none for " + ", ".join(clean)
    return text + ". Each judge's findings in words: the table of readings under the card."


def card_section(card: pd.DataFrame, models: list[str]) -> Section:
    """The card as the report's first section: the compact table and the readings, then
    every row folded, so the study sections follow within a screen or two."""
    models = [m for m in models if m in set(card["model"])]
    unestimated = unestimated_table(card, models)
    return Section(
        title="Judge card",
        anchor="judge-card",
        headline=headline(card, models),
        intro=("One audit of each judge across every study. Each number is one of the "
               "studies' own estimates with its interval and test; the p-values are "
               "adjusted together (Benjamini-Yekutieli, which holds under the dependence "
               "between measures computed from the same answers)."),
        tables=[compact_table(card, models), readings_table(card, models)],
        subsections=[Section(title="Every measure on the card", anchor="judge-card-rows",
                             fold=_fold_summary(card),
                             tables=[full_table(card),
                                     *([unestimated] if unestimated else [])])],
    )
