"""``python -m warpsim.hw``: capture golden vectors on a GPU (see :mod:`warpsim.hw.capture`)."""

import sys

from .capture import main

sys.exit(main())
