"""The I/O layer: how judgebias writes and reads its files, and nothing above it
(pyproject.toml's contracts keep it so): atomic writes (``atomicfile``), one schema per
artifact type (``artifacts``), content hashes of inputs (``filedigest``), SQLite in WAL
mode for the journals (``sqlitewal``) and fitted estimators saved as JSON that loads
without running code (``saved``)."""
