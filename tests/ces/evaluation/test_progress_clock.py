"""How often a running run's operation shows its progress: at most once a period per run, from this process."""

from __future__ import annotations

from convener.ces.evaluation.executor import ProgressClock


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_run_is_due_at_once_then_once_a_period() -> None:
    clock = Clock()
    progress = ProgressClock(0.5, clock)
    run = (1, "r1")
    assert progress.due(run)
    assert not progress.due(run)
    clock.now += 0.49
    assert not progress.due(run)
    clock.now += 0.02
    assert progress.due(run)
    assert progress.due((1, "r2")), "each run has its own period"


def test_a_finished_run_is_forgotten_and_stale_runs_are_dropped_when_many() -> None:
    clock = Clock()
    progress = ProgressClock(0.5, clock)
    progress.due((1, "r1"))
    progress.forget((1, "r1"))
    assert progress.due((1, "r1")), "a forgotten run starts afresh"
    for index in range(ProgressClock.MAX_RUNS):
        progress.due((2, f"old-{index}"))
    clock.now += 1.0
    assert progress.due((3, "new"))
    assert len(progress) == 1, "runs finished elsewhere (never forgotten here) do not pile up"
