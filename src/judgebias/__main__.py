"""``python -m judgebias``: the ``judgebias`` command in this interpreter (``judgebias init``
runs ``export-dvc`` so, whichever ``judgebias`` is first on PATH)."""

import sys

from judgebias.cli import main

sys.exit(main())
