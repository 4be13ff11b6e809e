"""Every size a caller controls, and its limit: one table of documented defaults.

A limit is declared once, here, with what it bounds; the code that enforces it imports the constant.
``docs/limits.md`` is checked against this table by the tests, so a limit cannot go undocumented.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limit:
    name: str
    value: int | float
    unit: str
    what: str
    setting: str | None = None
    """The ``CONVENER_*`` setting that changes it, when an operator may."""


LIMITS: dict[str, Limit] = {}


def limit(name: str, value: int, unit: str, what: str, setting: str | None = None) -> int:
    LIMITS[name] = Limit(name, value, unit, what, setting)
    return value


# Declared as: ``RUN_SESSION_TEXT = limit("ces.run_session.text", 100_000, "characters", "one input's text")``.


# --- http: what one request to an MCP endpoint may be ---------------------------------------------------

JSONRPC_BODY_BYTES = limit("http.jsonrpc.body", 4 * 1024 * 1024, "bytes", "one JSON-RPC request body POSTed to an "
                           "MCP endpoint; a longer one is refused unread (HTTP 413)")
JSONRPC_DEPTH = limit("http.jsonrpc.depth", 64, "levels", "nesting of arrays and objects in one JSON-RPC request "
                      "body, the body itself counting as one")
JSONRPC_METHOD_CHARS = limit("http.jsonrpc.method", 256, "characters", "one JSON-RPC request's method name")
