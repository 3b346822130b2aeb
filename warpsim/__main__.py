"""``python -m warpsim``: the command line (see :mod:`warpsim._cli`)."""

import sys

from ._cli import main

sys.exit(main())
