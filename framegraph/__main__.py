"""`python -m framegraph ...`: the command line (framegraph/cli)."""

import sys

from framegraph.cli import main

sys.exit(main())
