"""The statistics layer: what the studies and the card compute with, and nothing else of
judgebias (it reads no params file and makes no call; a contract in pyproject.toml keeps
it so): weighted bootstrap means over shared units (``bootstrap``), agreement with human
ratings (``agreement``), position bias and consistency (``position``), how a card
measure's interval shrinks with the design (``power``), a paired leaderboard of systems
with rank intervals (``ranking``), prediction-powered inference with human labels
(``ppi``) and how many labels it needs (``ppi_power``), and the triage of new judged
pairs with a certified accuracy (``triage``)."""
