# Two commands that work on a fresh machine with Python 3.11, pip and make.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: demo test check lint bench clean system-packages doc-figures trec_eval

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@ $(VENV)/.installed

demo: $(VENV)/.installed
	$(BIN)/python -m sampleval.demo

# Debian packages the campaign tests use: a real PostgreSQL server, a headless browser
# (Playwright drives /usr/bin/chromium; no browser is downloaded) and nginx (a reverse proxy
# in front of the server). Installed when missing;
# without them those tests fail in CI (CI set) and are skipped elsewhere.
system-packages:
	@missing=""; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	{ command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; } \
		|| missing="$$missing postgresql"; \
	{ command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; } || missing="$$missing nginx"; \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages:$$missing"; \
		sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		{ $$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
			$$sudo apt-get install -y -qq $$missing >/dev/null; } \
		|| { echo "could not install$$missing"; [ -z "$$CI" ]; }; \
	fi

# NIST's trec_eval 10.0 built into ~/.cache/sampleval for the differential tests (never
# committed); from $(TREC_EVAL_SRC) or a clone from GitHub. make test goes on without it.
trec_eval:
	scripts/build_trec_eval.sh

# Tests run in JOBS processes (the machines have 2 cores; JOBS=0: one process), a module at a
# time (--dist loadfile: a module-scoped fixture, e.g. a Monte Carlo table, is computed once,
# not once per process), handed to whichever process is free next in the order
# tests/conftest.py gives: the modules with slow tests first (--no-loadscope-reorder keeps it;
# xdist's default reorder puts the modules of many short tests first and the long ones last).
# The default distribution hands each process a quarter of its share in one consecutive
# block at the start: the first block held every slow module (the campaign servers, the
# command lines) and bounded the run.
JOBS ?= 2
DIST := --dist loadfile --no-loadscope-reorder

test: $(VENV)/.installed-test system-packages
	-@scripts/build_trec_eval.sh >/dev/null || echo "(differential tests against trec_eval will skip)"
	$(BIN)/ruff check src tests benchmarks studies
	$(BIN)/mypy
	$(BIN)/pytest -n $(JOBS) $(DIST)

# The fast tier: lint, types and every test not marked slow; make test runs everything.
check: $(VENV)/.installed-test
	$(BIN)/ruff check src tests benchmarks studies
	$(BIN)/mypy
	$(BIN)/pytest -m "not slow" -n $(JOBS) $(DIST)

# The two screenshots docs/guide/campaigns.md shows: the browser test run once more, its screenshots
# copied into docs/figures/ (test runs leave theirs in the git-ignored test-artifacts/).
doc-figures: $(VENV)/.installed-test system-packages
	rm -rf test-artifacts/doc-figures
	SAMPLEVAL_ARTIFACTS=test-artifacts/doc-figures $(BIN)/pytest -q -p no:cacheprovider \
		tests/campaign/test_campaign_browser.py
	cp test-artifacts/doc-figures/assessor-page.png test-artifacts/doc-figures/organiser-page.png \
		docs/figures/

bench: $(VENV)/.installed-test
	$(BIN)/python benchmarks/evaluate_vs_pytrec_eval.py

clean:
	rm -rf $(VENV) build dist src/*.egg-info
