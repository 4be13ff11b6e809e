"""The span tree of a turn, with real start and end times.

A turn's ``rootSpan`` has a child per agent that handled it, and under those a span per model
call (``LLM``), tool call (``TOOL``) and guardrail or callback. A span's name is its type; what it
was about goes in its attributes, and a failure in ``attributes.errorInfo``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from convener.api.protojson import Timestamp
from convener.ces.models import Span


@dataclass
class OpenSpan:
    name: str
    start: Timestamp
    attributes: dict[str, Any]
    children: list[Span] = field(default_factory=list)

    def fail(self, code: str, message: str) -> None:
        self.attributes["errorInfo"] = {"code": code, "message": message}

    def close(self) -> Span:
        end = max(Timestamp.now(), self.start)
        return Span(
            name=self.name,
            start_time=self.start,
            end_time=end,
            attributes=self.attributes or None,
            child_spans=self.children or None,
        )


class Trace:
    """Spans opened and closed in nesting order; ``finish`` returns the root."""

    def __init__(self, name: str, attributes: dict[str, Any]) -> None:
        self.stack = [OpenSpan(name, Timestamp.now(), dict(attributes))]

    @property
    def root(self) -> OpenSpan:
        return self.stack[0]

    @property
    def current(self) -> OpenSpan:
        return self.stack[-1]

    @contextmanager
    def span(self, name: str, **attributes: Any) -> Iterator[OpenSpan]:
        opened = OpenSpan(name, Timestamp.now(), {k: v for k, v in attributes.items() if v is not None})
        self.stack.append(opened)
        try:
            yield opened
        finally:
            self.stack.pop()
            self.current.children.append(opened.close())

    def finish(self) -> Span:
        while len(self.stack) > 1:  # spans left open by a failure still close, in order
            opened = self.stack.pop()
            self.current.children.append(opened.close())
        return self.stack[0].close()
