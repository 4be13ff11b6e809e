"""Reading a file a caller names without holding more of it than its limit allows.

``Path.read_text`` and ``for line in file`` read whatever is there: a 10 GB file, or one line of 10 GB, is in
memory before any size check can run. These read at most one byte past the limit.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

from convener.api.errors import InvalidArgument
from convener.outside.limits import LIMITS

_SKIP_CHUNK = 1024 * 1024


def read_at_most(stream: BinaryIO, limit_name: str, what: str) -> bytes:
    """All of ``stream``, or INVALID_ARGUMENT when it is longer than the limit named ``limit_name``."""
    maximum = int(LIMITS[limit_name].value)
    data = stream.read(maximum + 1)
    if len(data) > maximum:
        raise InvalidArgument(f"{what} is larger than {maximum} bytes ({limit_name})")
    return data


def bounded_lines(stream: BinaryIO, max_bytes: int) -> Iterator[bytes]:
    """The lines of ``stream``; a line longer than ``max_bytes`` comes as its first ``max_bytes + 1`` bytes
    (so the reader's own length check refuses it) and the rest of it is skipped without being kept."""
    while True:
        line = stream.readline(max_bytes + 1)
        if not line:
            return
        if len(line) > max_bytes and not line.endswith(b"\n"):
            while True:  # drop the rest of the overlong line, a chunk at a time
                rest = stream.readline(_SKIP_CHUNK)
                if not rest or rest.endswith(b"\n"):
                    break
        yield line
