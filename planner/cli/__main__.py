"""`python -m planner.cli`: the same entry point as the `planner` script."""

import sys

from planner.cli.main import main

sys.exit(main())
