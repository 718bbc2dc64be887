# The two commands: `make run` (the main job) and `make test` (the whole suite).
# Both create the virtual environment first, so they work on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PORT   ?= 3000
# pytest-xdist workers of `make test`: one per CPU; each test file runs whole in one worker (its fixtures built once)
TEST_WORKERS ?= auto

.PHONY: venv run serve test lint typecheck lock schema bench docs clean checkov

$(BIN)/.installed: requirements.txt requirements-dev.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	# the project itself, editable: the `fair-forge` command in .venv/bin (its dependencies are above)
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $@

venv: $(BIN)/.installed

## run: start the local API, POST every offline example to it, print the results
run: venv
	$(BIN)/python -m examples.run_local --port $(PORT)

## serve: only start the local API (Ctrl-C to stop)
serve: venv
	$(BIN)/python -m handler.local --port $(PORT)

## test: the whole suite (lint and type checks included), on every CPU (TEST_WORKERS=0: in this process alone)
test: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy --strict fair_forge_core action/fair_forge_action.py
	$(BIN)/mypy handler
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile

## checkov: checkov (latest 3.x) in a virtual environment of its own, .venv-checkov: it pins many packages that
## must not meet the project's. tests/aws/test_checkov.py runs it on template.yaml (and makes it when missing)
CHECKOV_VENV ?= .venv-checkov
$(CHECKOV_VENV)/bin/checkov:
	$(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(CHECKOV_VENV)/bin/python -m pip install --quiet "checkov>=3,<4"

checkov: $(CHECKOV_VENV)/bin/checkov

## lock: pin requirements.txt with hashes into requirements.lock (what the Lambda image installs)
lock: venv
	$(BIN)/uv pip compile requirements.txt --universal --python-version 3.12 --generate-hashes \
		--no-header --quiet -o requirements.lock

## pin: pin the Dockerfile's base image to the digest its tag has now (needs the network and crane or
## docker buildx), then refresh requirements.lock: the image's two inputs move together
.PHONY: pin
pin: venv
	scripts/pin-base-image.sh
	$(MAKE) lock

## schema: regenerate schemas/*.schema.json from the pydantic models (a test fails until you do)
schema: venv
	$(BIN)/python -m handler.api_schema

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy --strict fair_forge_core action/fair_forge_action.py
	$(BIN)/mypy handler

## bench: every benchmark in benchmarks/ (about 3 minutes, 127.0.0.1 only); figures in benchmarks/RESULTS.md
bench: venv
	$(BIN)/python -m benchmarks

## bench-peers: the peers side by side (promptfoo, deepeval, Inspect AI and Fair-Forge on one 100 ms judge stub,
## alternating rounds); installs the peers into .bench-peers/ first (PyPI and npm), then 127.0.0.1 only.
## Not part of `make test` or `make bench`; figures in benchmarks/RESULTS.md
.PHONY: bench-peers
bench-peers: venv
	$(BIN)/python -m benchmarks.bench_peers --install

## docs: build the docs site (mkdocs.yml) strictly into site/: a broken link or anchor, or any warning, fails
## (`make test` runs the same build: tests/unit/test_docs_site.py)
docs: venv
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

clean:
	rm -rf $(VENV) $(CHECKOV_VENV) .pytest_cache .ruff_cache .hypothesis out site
