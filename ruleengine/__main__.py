"""``python -m ruleengine``: the ``ruleengine`` command."""

from ruleengine.cli import run

run()
