"""``python -m benchmarks.agentdojo [--suites banking,slack]``: the table of ``report.py``."""

from benchmarks.agentdojo.report import main

main()
