# `make demo` and `make test` work on a fresh Debian/Ubuntu machine: they install what is missing first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test setup system-deps lint

demo: setup
	$(BIN)/stitchopt demo

test: setup
	$(BIN)/python -m pytest -q

lint: setup
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/mypy

setup: system-deps $(VENV)/.installed

system-deps:
	@bash scripts/install-system-deps.sh

$(VENV)/.installed: pyproject.toml setup.py src/stitchopt/native/evaluator.cpp
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch pinned here only: the CPU build is on disk, an open range would pull a multi-GB CUDA build
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev,ray,data,stitch,lift]'
	touch $@
