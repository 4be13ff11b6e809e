"""Smoke run of ``benchmarks/knowledge.py``: a synthetic corpus, lexical search against bm25s on each engine."""

from __future__ import annotations

import pytest

from tests.benchmarks.conftest import POSTGRES_URL, RunBenchmark, backend_arguments

pytest.importorskip("bm25s", reason="the bench extra (bm25s) is not installed")


@pytest.mark.slow
def test_the_knowledge_benchmark_prints_its_ratio_on_each_engine(run_benchmark: RunBenchmark) -> None:
    output = run_benchmark("knowledge", "--smoke", *backend_arguments())
    engines = ["sqlite", "postgresql"] if POSTGRES_URL else ["sqlite"]
    for engine in engines:
        assert f"=== {engine}:" in output
        ratio = next(line for line in output.splitlines() if line.strip().startswith(f"ratio {engine}:"))
        assert float(ratio.split(":")[1]) > 0
    assert output.count("ratio convener/bm25s (queries/s)") == len(engines)
    assert "lexical search: nDCG@10" in output
