# Every target sets itself up: a local .venv with the project and its dev extras.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test demo bench lint fixtures clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev,examples]'
	touch $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest

demo: $(STAMP)
	$(BIN)/python -m examples.refund_agent

bench: $(STAMP)
	$(BIN)/python benchmarks/overhead.py
	$(BIN)/python benchmarks/grading.py

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

fixtures:
	$(PYTHON) tests/fixtures/real/generate.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache otel-traj.db otel-traj-report.html
