"""The template study: copy it to start a new one (`judgebias new-study NAME`).

It is a complete, small study that runs end to end on the simulated panel, with one module
per role (docs/adding-a-study.md): each judge scores synthetic answers of varying length
and known quality, and the study estimates how many points a judge adds per ten words of
length at equal quality (a verbosity preference; a judge without one adds none). Replace
each module's content with your paper's; keep the names and the roles. It fills every
standard role of judgebias.study.ROLES at its conventional place and no optional one, so
its declaration names the study and nothing more; where yours departs from the table (a
role it lacks, one it has, a hook kept elsewhere), its declaration says so.

This package is not registered (judgebias.studies.STUDIES), so it never runs in a
project until `judgebias new-study` has copied it under a name of its own.
"""

from judgebias.study import Study

STUDY = Study(
    name="_template",
    title="Template study: a verbosity preference in score points",
    package=__name__,
    rules="workflow/rules/_template.smk",
    view="TemplateParams",
)
