"""``python -m toolkit.bench``: `toolkit.bench.cli.main`."""

import sys

from toolkit.bench.cli import main

sys.exit(main())
