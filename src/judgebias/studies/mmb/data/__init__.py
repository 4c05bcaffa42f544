"""MMB's input datasets (the data role): the pair and support tables built from HPDv2 and
MJ-Bench in their published shapes (pairs), the synthetic default written in those shapes
(synthetic), the MJBench protocol's degradations (degrade), the instruction pool's files
(instructions), and the checks of the params against the built data (checks)."""
