"""``python -m warpsim.hw``: capture golden vectors on a GPU (see :mod:`warpsim.hw.capture`);
``python -m warpsim.hw sfu-sweep``: the exhaustive special-function sweep (:mod:`warpsim.hw.device.sfu_sweep`)."""

import sys

if sys.argv[1:2] == ["sfu-sweep"]:
    from .device.sfu_sweep import main as sweep

    sweep(sys.argv[2:])
    sys.exit(0)

from .capture import main  # noqa: E402

sys.exit(main())
