"""``python -m ruleengine``: the ``ruleengine`` command."""

import sys

from ruleengine.cli import main

sys.exit(main())
