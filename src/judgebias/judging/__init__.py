"""The judging core shared by every study: tasks (judging.tasks), answer kinds
(judging.answers) and the exact expected score (judging.expected). Kept empty so that
importing one part does not import the others (rules depend on what their steps import)."""
