"""``serve-sim``: the simulated panel behind real HTTP APIs (being split by role)."""
