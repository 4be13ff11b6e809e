"""What a client types to answer a client tool call, read as the agent will receive it.

A client function declares the shape of its answer (``clientFunction.response``). The client answers with a
value of that shape, which reaches the agent as ``{"output": value}``, or with CES's own envelope,
``{"output": …}`` / ``{"error": …}``. The terminal chat and the console's playground both ask a person for
such an answer; both read it here, so a person meets the same sketch and the same complaints in either.
"""

from __future__ import annotations

import json
from typing import Any

from convener.api.errors import InvalidArgument
from convener.ces.definitions import ClientFunction
from convener.ces.runtime.failures import ToolFailure
from convener.ces.runtime.toolbox import as_response
from convener.ces.schemas import jsonschema_problem


def shape(schema: dict[str, Any]) -> str:
    """A JSON Schema as a one-line sketch of the value it wants: ``{"verified": boolean, "method": "a" | "b"}``."""
    if "enum" in schema:
        return " | ".join(json.dumps(value, ensure_ascii=False) for value in schema["enum"])
    kind = schema.get("type")
    kinds = [kind] if isinstance(kind, str) else [k for k in kind or () if k != "null"]
    if "object" in kinds and "properties" in schema:
        required = set(schema.get("required") or ())
        # By name: PostgreSQL's JSONB keeps no key order, and the sketch must read the same on either store.
        fields = (f"{json.dumps(name)}{'' if name in required else '?'}: {shape(child)}"
                  for name, child in sorted(schema["properties"].items()))
        return "{" + ", ".join(fields) + "}"
    if "array" in kinds and "items" in schema:
        return f"[{shape(schema['items'])}, …]"
    if "anyOf" in schema:
        return " | ".join(shape(child) for child in schema["anyOf"])
    return " | ".join(kinds) or "any JSON"


def answer_shape(function: ClientFunction | None) -> str:
    """The sketch of what ``function`` answers; empty when it declares no response."""
    if function is None or function.response is None:
        return ""
    return shape(function.response.to_json_schema())


def read_answer(text: str, name: str, function: ClientFunction | None) -> dict[str, Any]:
    """The tool response ``text`` gives to a call of ``function`` (empty text: ``{}``). Raises InvalidArgument
    with what is wrong: not JSON, not of the declared shape, or a malformed envelope."""
    text = text.strip()
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        raise InvalidArgument("that is not JSON") from None
    enveloped = isinstance(value, dict) and bool({"output", "error"} & value.keys())
    if function is not None and function.response is not None and not enveloped:
        problem = jsonschema_problem(value, function.response)
        if problem is not None:
            raise InvalidArgument(f"that is not what {name} answers ({problem}); expected "
                                  f"{answer_shape(function)}, or {{\"error\": \"…\"}}")
    try:
        return as_response(value)
    except ToolFailure as failure:
        raise InvalidArgument(failure.message) from None
