# groupcheck: `make test` and `make check` install what they need into .venv first.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TARGET ?= apache-kafka
PROTOCOL ?= all
PROFILE ?= ci
REPORT_DIR ?= reports/runs/check-$(TARGET)
LEVEL ?= protocol
# pytest worker processes for `make test` (pytest-xdist; 1 runs the tests in this process, in order)
TEST_WORKERS ?= 2

.PHONY: install install-spark wheel test lint check bench clean proofs conformance-reports docs

SPARK_STAMP := $(VENV)/.installed-spark

# the package (editable), its test extra and the exactly pinned lint tools (requirements-dev.lock)
$(STAMP): pyproject.toml setup.py requirements-dev.lock
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]' -r requirements-dev.lock
	touch $(STAMP)

# the spark extra: the pipeline's tests run in `make test` and CI (Java 17 is on the machine);
# then the driver JVM's class-data-sharing archive (docs/pipeline.md#jvm-archive)
$(SPARK_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -e '.[test,spark]' -r requirements-dev.lock
	$(BIN)/groupcheck pipeline jvm-archive
	touch $(SPARK_STAMP)

install: $(STAMP)

install-spark: $(SPARK_STAMP)

lint: $(STAMP)
	$(BIN)/ruff check model conformance tests benchmarks examples setup.py
	$(BIN)/ruff format --check model conformance tests benchmarks examples setup.py
	$(BIN)/mypy model conformance/engine conformance/wire
	$(BIN)/lint-imports

test: $(SPARK_STAMP) lint
	if [ "$(TEST_WORKERS)" = 1 ]; then $(BIN)/python -m pytest; \
	else $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist worksteal; fi

check: $(STAMP)
	$(BIN)/groupcheck check --target $(TARGET) --protocol $(PROTOCOL) --profile $(PROFILE) --level $(LEVEL) --report-dir $(REPORT_DIR)

# Publish reports/conformance/<target>.md for every real target (a target with findings exits 1: expected).
REAL_TARGETS ?= apache-kafka kfake librdkafka-mock tansu kafka-0.9
conformance-reports: $(STAMP)
	for t in $(REAL_TARGETS); do $(BIN)/groupcheck check --target $$t --protocol all --profile $(PROFILE) --publish || test $$? -eq 1; done

bench: $(STAMP)
	$(BIN)/python benchmarks/model_throughput.py

# Regenerate the invariant table of docs/invariants.md from specs/invariants.yaml.
docs: $(STAMP)
	$(BIN)/python -m conformance.reporting.invariant_table

proofs: $(STAMP)
	$(BIN)/groupcheck prove --report reports/proofs.md

# the wheel a broker team installs (dist/groupcheck-*.whl); tests/test_wheel.py installs it in a fresh venv
wheel: $(STAMP)
	$(BIN)/python -m pip wheel -q --no-deps -w dist .

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache .hypothesis
