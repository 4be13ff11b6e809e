"""Every tool call's arguments, held to the generic size limits before any model or service sees them.

A service bounds the fields it knows tighter (a session's input text, a name, a display name); this is the floor
under all of them, so no field, present or added later, takes an unbounded text, array or nesting from a caller.
"""

from __future__ import annotations

from typing import Any

from convener.api.errors import InvalidArgument
from convener.outside.limits import REQUEST_ARRAY, REQUEST_BYTES, REQUEST_DEPTH, REQUEST_STRING


def check_request_size(arguments: Any, where: str = "arguments") -> None:
    """INVALID_ARGUMENT naming the field and the limit when ``arguments`` (decoded JSON) go over one.

    Walks iteratively, so no nesting can exhaust the stack, and stops at the first limit passed. The bytes are
    those of the arguments' compact JSON, counted as the walk goes (close enough to the text the caller sent).
    """
    size = 0
    stack: list[tuple[str, Any, int]] = [(where, arguments, 1)]
    while stack:
        path, item, depth = stack.pop()
        if isinstance(item, str):
            size += _text_size(path, item)
        elif isinstance(item, dict | list):
            if depth > REQUEST_DEPTH:
                raise InvalidArgument(
                    f"{_clip(path)} is nested too deeply: at most {REQUEST_DEPTH} levels (request.depth)"
                )
            if len(item) > REQUEST_ARRAY:
                raise InvalidArgument(
                    f"{_clip(path)} has {len(item)} entries: at most {REQUEST_ARRAY} (request.array)"
                )
            size += 2 + max(len(item) - 1, 0)  # brackets and commas
            if isinstance(item, dict):
                for key, child in item.items():
                    size += _text_size(f"{path} key", str(key)) + 1
                    stack.append((f"{path}.{key}", child, depth + 1))
            else:
                stack.extend((f"{path}[{index}]", child, depth + 1) for index, child in enumerate(item))
        else:
            size += len(str(item))  # a number, true, false or null
        if size > REQUEST_BYTES:
            raise InvalidArgument(f"{where} are larger than {REQUEST_BYTES} bytes (request.bytes)")


def _text_size(path: str, text: str) -> int:
    if len(text) > REQUEST_STRING:
        raise InvalidArgument(
            f"{_clip(path)} is {len(text)} characters long: at most {REQUEST_STRING} (request.string)"
        )
    return len(text.encode("utf-8", "surrogatepass")) + 2


def _clip(path: str) -> str:
    """Paths are built from the caller's keys: never echo more than a line of them."""
    return path if len(path) <= 200 else path[:199] + "…"
