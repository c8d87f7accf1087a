"""``python -m toolkit.evaluate``: `toolkit.evaluate.cli.main`."""

import sys

from toolkit.evaluate.cli import main

sys.exit(main())
