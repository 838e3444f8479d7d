# The two commands the README promises: `make demo` and `make test`.
# Both create .venv and install into it, so they work on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The packages that exist so far (agent/ and backends/ arrive with later issues).
PKGS := $(foreach p,ruleengine agent backends,$(if $(wildcard $(p)/__init__.py),$(p)))
SRC := $(PKGS) tests benchmarks examples

.PHONY: demo test lint typecheck unit bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,mcp,otel,agentdojo]'
	touch $(STAMP)

# The demo ends with `ruleengine check` on a clean policy and on a broken one, whose
# deadlock makes `check` exit 1: that exit code (and only that one) lets make go on.
demo: $(STAMP)
	$(BIN)/python examples/demo.py
	$(BIN)/python examples/support_agent.py
	$(BIN)/python examples/mcp_agent.py
	$(BIN)/ruleengine check examples/policies/support_refunds.toml
	$(BIN)/ruleengine check examples/policies/ticket_triage.toml || test $$? -eq 1

lint: $(STAMP)
	$(BIN)/ruff check $(SRC)
	$(BIN)/ruff format --check $(SRC)

typecheck: $(STAMP)
	$(BIN)/mypy $(PKGS)

unit: $(STAMP)
	$(BIN)/pytest

test: lint typecheck unit

bench: $(STAMP)
	$(BIN)/python -m benchmarks.aggregation

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
