"""MMB's formulas and statistics (the measures role), one module per content: the metrics
(metrics), the factorial experiment (factorial) on one judge's arrays (factorial_inputs),
the image clusters (cluster), the significance procedure (significance), the error-coverage
bands (bands), the comparison over test groups (comparison), the power curve (power), and
the tables and figures' data of the report built from them (paper_tables). The estimators
themselves are judgebias.studies.mmb.estimator."""
