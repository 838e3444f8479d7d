"""AgentDojo, replayed through the gate: utility and attack success with and without a
policy per suite (``python -m benchmarks.agentdojo``; needs the ``agentdojo`` extra)."""
