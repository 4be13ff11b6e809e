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

# --- the gate: what a caller names outside the store -----------------------------------------------------

GATE_PATH = limit("outside.path", 4096, "characters", "a file or folder path a caller names (Linux's own maximum)")
GATE_URL = limit("outside.url", 2048, "characters", "a URL the server is asked to call (OpenAPI, webhook, MCP)")
GATE_DATABASE_URL = limit("outside.database_url", 4096, "characters", "a database URL named as a data source")
GATE_CALLABLE = limit("outside.callable", 300, "characters", "a python entry point, module:qualname")
