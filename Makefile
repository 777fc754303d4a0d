# Every target sets itself up, in one local .venv: the demo needs only the package itself (a quick
# install); the tests, lints and benchmarks add the dev tools and the examples' frameworks on top.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
BASE_STAMP := $(VENV)/.installed-base
DEV_STAMP := $(VENV)/.installed-dev
# The OpenTelemetry JavaScript SDK, for the test that drives `otel-traj serve` from another language.
JS_TESTS := tests/otlp_js
JS_STAMP := $(JS_TESTS)/node_modules/.installed

.PHONY: test fuzz demo bench lint fixtures clean

# pip is upgraded first: the resolver of the pip a venv starts with (23.2 for Python 3.11) gives up
# on the dev and examples extras together; the current one finds the SDK release all of them accept.
$(BASE_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e .
	touch $@

# Strands holds the OpenTelemetry SDK at 1.45.1 (through opentelemetry-instrumentation-threading);
# the package and the other frameworks accept that release, so every example runs from this venv.
$(DEV_STAMP): $(BASE_STAMP)
	$(BIN)/python -m pip install -q -e '.[dev,examples]'
	touch $@

$(JS_STAMP): $(JS_TESTS)/package-lock.json
	npm ci --prefix $(JS_TESTS) --no-audit --no-fund --loglevel=error
	touch $@

test: $(DEV_STAMP) $(JS_STAMP)
	$(BIN)/python -m pytest

# The long randomized search of the Hypothesis properties (``make test`` runs them derandomized):
# random seeds, FUZZ_FACTOR (default 50) times each property's examples.
fuzz: $(DEV_STAMP)
	HYPOTHESIS_PROFILE=fuzz $(BIN)/python -m pytest -q $$(grep -l "@given" tests/test_*.py)

demo: $(BASE_STAMP)
	$(BIN)/python -m examples.refund_agent

bench: $(BASE_STAMP)
	$(BIN)/otel-traj --version
	$(BIN)/python benchmarks/overhead.py
	$(BIN)/python benchmarks/grading.py
	$(BIN)/python benchmarks/worker.py
	$(BIN)/python benchmarks/receiver.py
	$(BIN)/python benchmarks/soak.py
	$(BIN)/python benchmarks/offline.py
	$(BIN)/python benchmarks/cli.py
	$(BIN)/python benchmarks/store.py

lint: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

fixtures:
	$(PYTHON) tests/fixtures/real/generate.py

# .venv-strands: the separate Strands venv of earlier checkouts.
clean:
	rm -rf $(VENV) .venv-strands $(JS_TESTS)/node_modules .pytest_cache .mypy_cache .ruff_cache .hypothesis .import_linter_cache build
	rm -f otel-traj.db otel-traj.db-wal otel-traj.db-shm otel-traj-report.html
