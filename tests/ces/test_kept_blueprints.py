"""Blueprints kept by key: made once, however many threads ask for a new one at once."""

from __future__ import annotations

import threading
from typing import Any

from convener.ces.versions import KeptBlueprints


def test_threads_asking_for_a_new_blueprint_at_once_wait_for_the_one_made_first() -> None:
    kept = KeptBlueprints(size=4)
    made: list[object] = []
    started = threading.Event()
    release = threading.Event()

    def make() -> Any:
        started.set()
        release.wait(5)
        made.append(object())
        return made[-1]

    got: list[Any] = []
    threads = [threading.Thread(target=lambda: got.append(kept.get(("app", 1), make))) for _ in range(4)]
    threads[0].start()
    assert started.wait(5)
    for thread in threads[1:]:
        thread.start()
    release.set()
    for thread in threads:
        thread.join(5)
    assert len(made) == 1 and got == made * 4


def test_the_newest_are_kept_and_a_changed_key_is_made_again() -> None:
    kept = KeptBlueprints(size=2)
    calls: list[str] = []

    def maker(name: str) -> Any:
        return lambda: calls.append(name) or name

    assert [kept.get(key, maker(key)) for key in ("a", "b", "a", "c", "b")] == ["a", "b", "a", "c", "b"]
    assert calls == ["a", "b", "c", "b"], "b was the oldest when c came"
