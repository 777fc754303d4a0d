# Every target sets itself up: a local .venv with the project and its dev extras.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Strands pins hold the OpenTelemetry SDK at an older release: its example runs from its own venv.
STRANDS_VENV := .venv-strands
STRANDS_STAMP := $(STRANDS_VENV)/.installed
# The OpenTelemetry JavaScript SDK, for the test that drives `otel-traj serve` from another language.
JS_TESTS := tests/otlp_js
JS_STAMP := $(JS_TESTS)/node_modules/.installed

.PHONY: test demo bench lint fixtures clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev,examples]'
	touch $(STAMP)

$(STRANDS_STAMP): pyproject.toml
	test -x $(STRANDS_VENV)/bin/python || $(PYTHON) -m venv $(STRANDS_VENV)
	$(STRANDS_VENV)/bin/python -m pip install -q -e '.[examples-strands]'
	touch $(STRANDS_STAMP)

$(JS_STAMP): $(JS_TESTS)/package-lock.json
	npm ci --prefix $(JS_TESTS) --no-audit --no-fund --loglevel=error
	touch $(JS_STAMP)

test: $(STAMP) $(STRANDS_STAMP) $(JS_STAMP)
	$(BIN)/python -m pytest

demo: $(STAMP)
	$(BIN)/python -m examples.refund_agent

bench: $(STAMP)
	$(BIN)/otel-traj --version
	$(BIN)/python benchmarks/overhead.py
	$(BIN)/python benchmarks/grading.py
	$(BIN)/python benchmarks/worker.py
	$(BIN)/python benchmarks/receiver.py

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

fixtures:
	$(PYTHON) tests/fixtures/real/generate.py

clean:
	rm -rf $(VENV) $(STRANDS_VENV) $(JS_TESTS)/node_modules .pytest_cache .mypy_cache .ruff_cache build otel-traj.db otel-traj-report.html
