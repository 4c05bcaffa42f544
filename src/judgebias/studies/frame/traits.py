"""A helper of the sim role: the defaults of a simulated FRAME judge's pairwise traits
(``sim.frame.pairwise``; what each does: judgebias.studies.frame.sim). A module of its own
because the params warnings (params.py, which every FRAME step imports for its typed view)
and the sim backend both read them, and neither should depend on the other's code."""

# The pairwise judge's traits (``sim.frame.pairwise``) where the block leaves them out.
PAIRWISE_DEFAULTS = {"temperature": 0.5, "tie": 0.0, "position_bias": 0.0}
