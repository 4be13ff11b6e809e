"""Services built on first use, each once: a command builds (and imports) only the services it uses."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar, cast

from convener import collector

Built = TypeVar("Built")


class BuiltOnce:
    def __init__(self) -> None:
        self._built: dict[str, Any] = {}
        # Re-entrant: building a service builds those it needs; one lock, so that a worker thread building
        # services for a job and a request building them never make two of one service (two of a service would
        # register its job tasks twice).
        self._building = threading.RLock()

    def get(self, name: str, build: Callable[[], Built]) -> Built:
        """The object ``name``, built by ``build`` on first use."""
        try:
            return cast(Built, self._built[name])
        except KeyError:
            pass
        with self._building:
            if name not in self._built:
                with collector.long_lived():  # a service lives as long as the process
                    self._built[name] = build()
            return cast(Built, self._built[name])

    def snapshot(self) -> dict[str, Any]:
        """What is built so far (without waiting for a build under way)."""
        return dict(self._built)
