"""``python -m sklearn_ilargi.calibrate [--quick]``: re-train the cost model on this machine.

See :func:`sklearn_ilargi.cost._calibrate.calibrate`.
"""

import sys

from .cost._calibrate import main

if __name__ == "__main__":
    sys.exit(main())
