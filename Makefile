# `make demo` and `make test` work on a fresh Debian/Ubuntu machine: they install what is missing first.
# The demo needs only the core package and system packages; the test suite adds every extra (PyTorch's CPU
# build first) and the packages only tests use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test test-fast setup setup-test system-deps system-deps-test lint

demo: setup
	$(BIN)/stitchopt demo -o demo-report.html

# One worker per core (pytest-xdist), each test module on one worker so that its fixtures are built once.
test: setup-test
	$(BIN)/python -m pytest -q -n auto --dist loadfile

# The edit loop: everything not marked slow (under 3 minutes on 2 cores).
test-fast: setup-test
	$(BIN)/python -m pytest -q -n auto --dist loadfile -m "not slow"

lint: setup-test
	$(BIN)/ruff format --check src tests benchmarks setup.py
	$(BIN)/ruff check src tests benchmarks setup.py
	$(BIN)/mypy

setup: system-deps $(VENV)/.installed

setup-test: system-deps-test $(VENV)/.installed-extras

system-deps:
	@bash scripts/install-system-deps.sh

system-deps-test:
	@bash scripts/install-system-deps.sh --test --gpu

$(VENV)/.installed: pyproject.toml setup.py src/stitchopt/evaluation/native/evaluator.cpp $(wildcard src/stitchopt/cc/plugin/*.cpp src/stitchopt/cc/plugin/*.h)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e .
	touch $@

$(VENV)/.installed-extras: $(VENV)/.installed scripts/install-torch.sh
	bash scripts/install-torch.sh $(BIN)/pip
	$(BIN)/pip install -q -e '.[dev,ray,data,stitch,lift,gpu]'
	touch $@
