"""Plain runner for the warpsim benchmark: ``python benchmarks/run.py [--quick] [--json PATH]``.

Same as ``warpsim bench`` / ``python -m warpsim.cli.bench``; see warpsim/cli/bench.py.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from warpsim.cli.bench import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
