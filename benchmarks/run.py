"""Plain runner for the warpsim benchmark: ``python benchmarks/run.py [--quick] [--json PATH]``.

Same as ``warpsim bench`` / ``python -m warpsim._bench``; see warpsim/_bench.py.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from warpsim._bench import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
