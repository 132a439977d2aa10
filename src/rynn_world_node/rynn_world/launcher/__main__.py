"""``python -m rynn_world.launcher``: the same as the ``rynn_launch`` command."""

import sys

from rynn_world.launcher.cli import main

sys.exit(main())
