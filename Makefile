# Two commands: `make serve` (site on http://127.0.0.1:$(PORT), PORT ?= 8000: `make serve PORT=8001`)
# and `make test` (lint, then every test). Each sets up what it needs: a pinned Python venv, the pinned
# npm packages (Pyodide, KaTeX) and, for the tests, Debian's chromium. Slow steps are stamped and run once.

PYTHON ?= python3
PORT   ?= 8000
VENV   := .venv
BIN    := $(VENV)/bin
STAMPS := .stamps
export NO_MKDOCS_2_WARNING := 1
export PYTHONDONTWRITEBYTECODE := 1

.PHONY: setup check-port serve live build lint test test-site test-engine test-pyodide test-browser bench validate clean

setup: $(STAMPS)/venv $(STAMPS)/npm

pyodide-site := $(STAMPS)/pyodide-site/.done

$(STAMPS)/venv: requirements.txt pyproject.toml
	@mkdir -p $(STAMPS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

$(STAMPS)/npm: package.json package-lock.json
	@mkdir -p $(STAMPS)
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

# Pure-Python test dependencies for running the engine suite inside Pyodide.
$(pyodide-site): requirements-pyodide.txt $(STAMPS)/venv
	rm -rf $(STAMPS)/pyodide-site
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
	  --target $(STAMPS)/pyodide-site -r requirements-pyodide.txt
	touch $@

# Debian's chromium for the browser tests (Playwright cannot download its own browser here).
$(STAMPS)/chromium:
	@mkdir -p $(STAMPS)
	@if [ ! -x /usr/bin/chromium ]; then \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	fi
	/usr/bin/chromium --version
	touch $@

# A busy port fails at once, before any setup, with one line that says what to do.
check-port:
	$(eval busy := $(shell $(PYTHON) tools/check_port.py '$(PORT)'))
	$(if $(busy),$(error $(busy)))

# Readers' bytes: a strict build served by tools/serve.py (pre-compressed .br/.gz, ETag/304, immutable hashed
# paths), rebuilt when a source changes (reload the page). `make live`: mkdocs' live-reloading server for authors.
serve: check-port setup
	$(BIN)/python tools/serve.py --build --watch --port $(PORT)

live: check-port setup
	$(BIN)/mkdocs serve --strict --dev-addr 127.0.0.1:$(PORT)

build: setup
	$(BIN)/mkdocs build --strict

# Both checks always run, so one pass reports every finding; config in pyproject.toml.
lint: setup
	@status=0; \
	echo "ruff check ."; $(BIN)/ruff check . || status=1; \
	echo "ruff format --check ."; $(BIN)/ruff format --check . || status=1; \
	exit $$status

# One strict build per `make test`, shared by every layer: tests/conftest.py::built_site uses $(TEST_SITE)
# when LC_BUILT_SITE names it (and builds its own otherwise). Built with the default site_url, as `make build`.
TEST_SITE := $(STAMPS)/test-site
# Not --quiet: MkDocs drops warnings below ERROR before --strict counts them, so a quiet strict build passes with
# broken references. The log is kept; a failed build prints it without its INFO lines.
test-site: setup
	rm -rf $(TEST_SITE) $(TEST_SITE).done
	@start=$$(date +%s%N); env -u SITE_URL $(BIN)/mkdocs build --strict --site-dir $(TEST_SITE) > $(TEST_SITE).log 2>&1 \
	  || { grep -v '^INFO' $(TEST_SITE).log >&2; exit 1; }; \
	echo "site built in $$(( ($$(date +%s%N) - start) / 1000000 )) ms" && touch $(TEST_SITE).done

# pytest-xdist (pinned): one pass of every test on JOBS workers (default: one per core), each handed whole test
# files (a class of the Pyodide suite is a unit of its own), slowest first (tests/conftest.py::LAYERS: the Pyodide
# suite's Node runs, one shard per worker, then the browser tours, one Chromium per worker and one Pyodide boot per
# tour, then the wheel), with the engine, hook and doctest files filling the workers around them. One pass, not
# two: axe's audit and a Node run each keep one core busy, and the other core takes the rest meanwhile.
# `make test JOBS=0` runs it in one process.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
XDIST := -n $(JOBS) --dist loadscope --no-loadscope-reorder

test: lint $(pyodide-site) $(STAMPS)/chromium test-site
	LC_BUILT_SITE=$(TEST_SITE) $(BIN)/python -m pytest $(XDIST)

# The engine, hook and site tests (doctests included) over pyproject's testpaths, without Pyodide or a browser.
test-engine: setup test-site
	LC_BUILT_SITE=$(TEST_SITE) $(BIN)/python -m pytest $(XDIST) -m "not browser and not pyodide"

# The engine suite under Pyodide, one Node run (shard) per worker (tests/test_pyodide.py::SHARDS).
test-pyodide: setup $(pyodide-site)
	$(BIN)/python -m pytest $(XDIST) tests -m pyodide

test-browser: setup $(STAMPS)/chromium test-site
	LC_BUILT_SITE=$(TEST_SITE) $(BIN)/python -m pytest tests -m browser

# Not part of `make test`: cold-run figures (median/min/max, interleaved A/B, load) -> bench/results.json.
bench: setup $(STAMPS)/chromium test-site
	$(BIN)/python bench/run.py --site $(TEST_SITE)

# The validation harness (validation/): PyTorch's CPU build and transformers in their own venv, installed
# once (stamped), then the configurations whose stamp (case, model config, harness code, pinned versions) is not in
# validation/measured.json re-measured (`make validate FULL=1`: every one); validation/results.json is rewritten
# with fresh predictions and the target fails if any is out of tolerance.
VVENV := .venv-validation

$(STAMPS)/venv-validation: requirements-validation.txt
	@mkdir -p $(STAMPS)
	rm -rf $(VVENV)
	$(PYTHON) -m venv $(VVENV)
	$(VVENV)/bin/python -m pip install --quiet --disable-pip-version-check --no-deps -r requirements-validation.txt
	$(VVENV)/bin/python -c "import torch, transformers; print('torch', torch.__version__, '| transformers', transformers.__version__)"
	touch $@

validate: $(STAMPS)/venv-validation
	$(VVENV)/bin/python -m validation.compile $(if $(FULL),,--if-stale)
	$(VVENV)/bin/python -m validation.measure $(if $(FULL),--full)

clean:
	rm -rf site $(STAMPS) $(VVENV) .pytest_cache .hypothesis .cache
