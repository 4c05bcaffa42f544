"""The leaderboard study: rank the user's own systems with the de-biased judges the audit
vetted, with honest intervals (spec ../shared/specs/leaderboard.md).

Each task lists systems and where their outputs on the task's items come from (captions
of images, or images for prompts); every judging method that fits the task's kind (one
plain judge, a panel mean with self-exclusion, the fitted Pomms ensemble for captions;
one plain pairwise judge and the fitted MMB with its triage for images) scores them;
the tables give each system's mean with a paired bootstrap interval over items, every
pairwise difference with its interval and BH-FDR test, rank intervals, the PPI++
intervals where human labels exist, and the places where a method orders two systems
unlike the plain judge. It asks the philautia and MMB studies' prompts, which their
simulated tasks answer (no ``sim.py``), and reports no judge-card rows (it
judges systems, not judges). `judgebias leaderboard` prints the result (``cli.py``).
"""

from judgebias.study import Study

STUDY = Study(
    name="leaderboard",
    title="Leaderboard: your systems ranked by a judge you can trust",
    package=__name__,
    rules="workflow/rules/leaderboard.smk",
    view="LeaderboardParams",
    has=("cli", "power_section"),
    lacks=("sim", "card", "card_inputs", "power"),
)
