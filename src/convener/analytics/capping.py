"""Reading a query's result in batches, within a row cap, a byte cap and a cap on any one value.

Sizes are counted as the values would be written as text (what reaches a response and the store): a string
by its UTF-8 bytes, bytes by their hex digits, a number, date or flag as a few bytes, a list or record as the
sum of its parts. Counting stops as soon as a value passes its cap, so a huge list is not walked to the end.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from convener.analytics.deadline import Watch
from convener.api.errors import ResourceExhausted

BATCH_ROWS = 200


@dataclass(frozen=True)
class Caps:
    rows: int
    bytes: int | None  # None: no cap on the whole result (the engine's own catalog queries)
    value: int


@dataclass(frozen=True)
class Collected:
    rows: list[tuple[Any, ...]]
    cut_at_bytes: int | None = None
    """The byte cap, when rows were left out because the result reached it."""


Fetch = Callable[[int], Sequence[Sequence[Any]]]


def collect(fetch: Fetch, names: Sequence[str], caps: Caps, watch: Watch) -> Collected:
    """At most ``caps.rows`` rows from ``fetch`` (a cursor's ``fetchmany``), stopping before the row that would
    pass the byte cap; ``ResourceExhausted`` for a value longer than ``caps.value``; ``DeadlineExceeded`` as
    soon as the deadline has passed between batches."""
    rows: list[tuple[Any, ...]] = []
    total = 0
    while len(rows) < caps.rows:
        watch.check()
        batch = fetch(min(BATCH_ROWS, caps.rows - len(rows)))
        if not batch:
            break
        for row in batch:
            size = 0
            for index, value in enumerate(row):
                found = value_bytes(value, caps.value)
                if found > caps.value:
                    column = names[index] if index < len(names) else str(index + 1)
                    raise too_long(column, caps.value)
                size += found
            if caps.bytes is not None and total + size > caps.bytes:
                return Collected(rows, cut_at_bytes=caps.bytes)
            total += size
            rows.append(tuple(row))
    return Collected(rows)


def too_long(column: str, cap: int) -> ResourceExhausted:
    return ResourceExhausted(f"a value of column {column[:80]!r} is longer than {cap:,} bytes, the most one value "
                             "may have (CONVENER_ANALYTICS_VALUE_BYTES); select a part of it, e.g. left(x, 100)")


def value_bytes(value: Any, cap: int) -> int:
    """The value's size as text, counted up to just past ``cap``."""
    if value is None or isinstance(value, (bool, float)):
        return 8
    if isinstance(value, int):
        return max(8, value.bit_length() // 3 + 2)  # digits of a HUGEINT or a NUMERIC(38) as text
    if isinstance(value, str):
        return len(value) if len(value) > cap else len(value.encode("utf-8", "replace"))
    if isinstance(value, (bytes, bytearray, memoryview)):
        return 2 * len(value)
    if isinstance(value, Mapping):
        parts: Any = (part for pair in value.items() for part in pair)
    elif isinstance(value, (list, tuple, set, frozenset)):
        parts = iter(value)
    else:
        return min(len(str(value)), cap + 1)  # Decimal, date, UUID, interval…: small, but counted
    total = 2
    for part in parts:
        total += value_bytes(part, cap) + 2
        if total > cap:
            return total
    return total
