"""``python -m warpsim``: the command line (see :mod:`warpsim.cli.main`)."""

import sys

from .cli.main import main

sys.exit(main())
