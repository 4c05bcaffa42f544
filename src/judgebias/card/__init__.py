"""The judge card: one audit of each judge across every study (issue 22).

A researcher asks "is the judge I am about to use biased, how much, and what should I do
about it?", not "what does study X's Table 3 say". The card answers per panel model: each
study that judged the model contributes rows (a study plug-in's ``card`` module:
``inputs(params)`` names the result files it reads, ``rows(params, files)`` turns them
into card rows), and the core only gathers them, adjusts every p-value on the card for
the false discovery rate, and shows them (`judgebias card`, the report's first section,
its headline cells under ``results/card/`` as DVC metrics). A model a study did not
judge has no row for it, never a zero.

Modules: ``schema`` (the row and card tables), ``build`` (gather, FDR, write),
``text`` (the plain-language reading and the terminal card), ``compare`` (two runs side
by side). The report's card section is the report's (judgebias.report.card): the card
sits below the report, which shows it.
"""
