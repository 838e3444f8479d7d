"""Timing benchmarks of ruleengine: ``python -m benchmarks.aggregation`` prints every table.

One module per table: ``aggregation`` (table 1, ``Reasoner.resolve``, and the command line),
``end_to_end`` (table 2, ``Reasoner.decide``), ``peer`` (table 3, BeeAI's reasoner on table 2's
states; its adapter ``peer_beeai`` needs beeai-framework). The private modules hold what they
share: ``_config`` (how much to run), ``_workloads`` (the emitted sets of table 1),
``_mixes`` (the requirement mixes and histories of tables 2 and 3), ``_reference`` (table 1's
plain-Python yardstick) and ``_report`` (statistics, table text, JSON). The benchmarks only
time; the correctness of the engine on these workloads is tested in ``tests/``.
"""

__all__: list[str] = []
