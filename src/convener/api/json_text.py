"""A JSON document a caller sends as text or bytes, read within a size, as one set of errors says it.

Strict JSON: UTF-8 (a byte-order mark is allowed and dropped), not empty, and no ``NaN`` or ``Infinity``, which
Python's reader would otherwise accept. Every refusal is ``InvalidArgument`` naming ``subject`` ("the content",
a file's name), so each importer says the same thing about the same fault.
"""

from __future__ import annotations

import json
from typing import Any

from convener.api.errors import InvalidArgument


def load_json_text(content: str | bytes, max_bytes: int, subject: str) -> Any:
    if not isinstance(content, str | bytes):
        raise InvalidArgument(f"{subject} must be text, not {type(content).__name__}")
    size = len(content) if isinstance(content, bytes) else len(content.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise InvalidArgument(f"{subject} is larger than {_size(max_bytes)}")
    if isinstance(content, bytes):
        try:
            text = content.decode("utf-8-sig")
        except UnicodeDecodeError as error:
            raise InvalidArgument(f"{subject} is not UTF-8: invalid byte at offset {error.start}") from None
    else:
        text = content.removeprefix("\ufeff")
    if not text.strip():
        raise InvalidArgument(f"{subject} is empty")

    def no_constant(name: str) -> Any:
        raise InvalidArgument(f"{subject} is not JSON: {name} is not a JSON number")

    try:
        return json.loads(text, parse_constant=no_constant)
    except json.JSONDecodeError as error:
        raise InvalidArgument(
            f"{subject} is not JSON: {error.msg} at line {error.lineno} column {error.colno}") from None
    except RecursionError:
        raise InvalidArgument(f"{subject} is nested too deeply") from None


def _size(limit: int) -> str:
    mib, kib = 1024 * 1024, 1024
    return f"{limit // mib} MB" if limit % mib == 0 else f"{limit // kib} KB" if limit % kib == 0 else f"{limit} bytes"
