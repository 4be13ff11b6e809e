"""Smoke run of benchmarks/chat.py: a tiny export imported and listed on the suite's engines."""

from __future__ import annotations

import re

import pytest

from tests.benchmarks.conftest import RunBenchmark, backend_arguments


@pytest.mark.slow
def test_chat_benchmark_prints_its_ratios(run_benchmark: RunBenchmark) -> None:
    output = run_benchmark("chat", "--messages", "2500", "--channels", "3", "--users", "5", "--repeat", "2",
                           *backend_arguments())
    engines = ["sqlite", "postgresql"] if "postgresql" in backend_arguments() else ["sqlite"]
    for engine in engines:
        assert re.search(rf"ratio import ÷ read alone \({engine}\): [0-9.]+×", output), output
        assert re.search(rf"ratio list_messages service ÷ raw SQL \({engine}\): [0-9.]+×", output), output
    assert "2,500 messages" in output
