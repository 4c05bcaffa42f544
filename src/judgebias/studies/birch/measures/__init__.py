"""BIRCH's measures (role: measures), pure functions of frames: the paper's formulas
(.formulas), their intervals and tests (.inference), a dataset's result tables and
headline numbers built from them (.results), and the supplement's Table 5 (.anchors) and
Table 6 (.cost)."""
