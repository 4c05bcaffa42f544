"""The study registry: one line per study, its name and the package that declares it.

Only names live here (judgebias.study loads them), so adding a study changes no module
that another study's steps import, and reruns none of their jobs. See
docs/adding-a-study.md.
"""

STUDIES = {
    "philautia": "judgebias.studies.philautia",
    "pomms": "judgebias.studies.pomms",
    "mmb": "judgebias.studies.mmb",
    "frame": "judgebias.studies.frame",
    "birch": "judgebias.studies.birch",
    "leaderboard": "judgebias.studies.leaderboard",
    "recorded": "judgebias.studies.recorded",
}
