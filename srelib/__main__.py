"""``python -m srelib``: the same command line as the ``srelib`` console script."""

import sys

from srelib.cli import main

sys.exit(main())
