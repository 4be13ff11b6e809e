"""Smoke run of benchmarks/startup.py: one run per command, on the suite's engines."""

from __future__ import annotations

import re

import pytest

from tests.benchmarks.conftest import RunBenchmark, backend_arguments

RATIO = re.compile(r"^  (?P<label>.+?)\s+\d+\.\d{3} s\s+\d+\.\d× python -c pass\s+\d+\.\d{3} s cpu$", re.MULTILINE)


@pytest.mark.slow
def test_startup_benchmark_prints_a_ratio_per_command(run_benchmark: RunBenchmark) -> None:
    output = run_benchmark("startup", "--repeat", "1", *backend_arguments())
    labels = [match["label"] for match in RATIO.finditer(output)]
    assert "convener --help" in labels and "convener eval --help" in labels
    engines = len(re.findall(r"^=== start-up, (?:sqlite|postgresql) store", output, re.MULTILINE))
    assert engines == (2 if "--backend both" in " ".join(backend_arguments()) else 1)
    assert labels.count("convener jobs") == engines and labels.count("convener data sources") == engines
    assert output.count("imports: ") == len(labels)
