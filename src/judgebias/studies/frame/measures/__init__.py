"""FRAME's formulas and statistics (seed 004), pure functions of tables, each citing the
paper: score changes under manipulation (effects), the human side (humans), pairwise win
rates (pairwise), the paper's recipes tested without selection (presets), and the
summaries across them (summary)."""
