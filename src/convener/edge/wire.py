"""The JSON-RPC wire at the edge: a checked message's envelope, and error responses in one shape for every
refusal and failure.

The message starts with the google.rpc code (``INVALID_ARGUMENT: …``, ``UNAVAILABLE: …``), as tool errors do,
so a caller reads one convention whether a request failed at the edge or inside a tool.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, TypeAlias

from starlette.types import Send

from convener.api.errors import Code

RequestId: TypeAlias = str | int
"""What MCP allows as a request ``id``: a string or an integer (never null, a boolean, a fraction, an array or
an object)."""

_SAFE_INTEGER = 2**53
"""Integer ids beyond this are not exact in JSON readers that use doubles, so they are not accepted."""


@dataclass(frozen=True)
class Envelope:
    """A message that passed the guard: what the layers after it may want without parsing it again."""

    method: str | None
    request_id: RequestId | None
    params: dict[str, Any]
    progress_token: RequestId | None = None
    """``params._meta.progressToken``, checked: the caller asks for progress notifications under it."""


def valid_request_id(value: Any) -> RequestId | None:
    """``value`` when it is an id MCP allows, else None."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and -_SAFE_INTEGER <= value <= _SAFE_INTEGER:
        return value
    return None


def error_body(rpc_code: int, code: Code, message: str, request_id: RequestId | None) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "error": {"code": rpc_code, "message": f"{code.name}: {message}"}},
        ensure_ascii=False,
    ).encode()


async def send_error(send: Send, status: int, rpc_code: int, code: Code, message: str,
                     request_id: RequestId | None = None, headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    """Answer with a JSON-RPC error object (``request_id`` echoed when known) and HTTP ``status``."""
    body = error_body(rpc_code, code, message, request_id)
    await send({
        "type": "http.response.start",
        "status": status,
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                    *headers],
    })
    await send({"type": "http.response.body", "body": body})
