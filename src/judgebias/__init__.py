"""judgebias: audit and de-bias multimodal LLM judges (docs/design.md).

`load` reads a fitted de-biaser the pipeline saved (results/pomms/ensemble.json) as a
scikit-learn estimator; `load_card` its model card.

Every job imports this module, and the workflow counts every module it names, a lazy
import included, as a code dependency of every rule (judgebias.importgraph). So its
functions reach their implementation, judgebias.io.saved, by name through importlib:
no job calls them, and an edit of the loader must not rerun the whole pipeline (only the
rules whose steps import it, Pomms' fit). tests/core/test_saved.py checks both.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

__all__ = ["load", "load_card"]

_SAVED = "judgebias.io.saved"  # the implementation (see the module docstring)


def load(path: str | Path) -> Any:
    """The fitted de-biaser saved at `path` (e.g. ``results/pomms/ensemble.json``), a
    scikit-learn estimator: ``judgebias.load(path).predict(X)``.

    The file is JSON (judgebias.io.saved): loading it runs no code it names. Its class
    must be one a registered study declares (``Study.saved``); anything else, an unknown
    format version or an inconsistent array is refused with a
    `judgebias.io.saved.SavedFileError` naming the file.
    """
    from judgebias.study import saved_classes

    saved = importlib.import_module(_SAVED)
    return saved.load(path, trusted=saved_classes()).estimator


def load_card(path: str | Path) -> dict[str, Any]:
    """The model card saved with the estimator at `path` (panel, training data, fit
    settings, agreement with people), read without building the estimator."""
    card: dict[str, Any] = importlib.import_module(_SAVED).read_card(path)
    return card
