# Two commands that work on a fresh machine with Python 3.11, pip and make.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: demo test lint bench clean trec_eval

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

# NIST's trec_eval 10.0 built into ~/.cache/sampleval for the differential tests (never
# committed); from $(TREC_EVAL_SRC) or a clone from GitHub. make test goes on without it.
trec_eval:
	scripts/build_trec_eval.sh

test: $(VENV)/.installed-test
	-@scripts/build_trec_eval.sh >/dev/null || echo "(differential tests against trec_eval will skip)"
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/mypy
	$(BIN)/pytest

bench: $(VENV)/.installed-test
	$(BIN)/python benchmarks/evaluate_vs_pytrec_eval.py

clean:
	rm -rf $(VENV) build dist src/*.egg-info
