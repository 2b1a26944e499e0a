"""``python -m mpiworkbench`` is the ``mpiworkbench`` console script."""

import sys

from mpiworkbench.cli import main
if __name__ == "__main__":
    sys.exit(main())
