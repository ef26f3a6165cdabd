"""``python -m solver.cli``: the fairpack command line."""

import sys

from solver.cli.main import main

sys.exit(main())
