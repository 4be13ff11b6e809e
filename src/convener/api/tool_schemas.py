"""The JSON Schemas a tool declares in ``tools/list``: true to the wire model, and small enough for a client.

MCP clients put every listed tool's schemas in their model's context, so a byte of schema costs every
conversation. Pydantic's schema of a wire model says much a client never needs: a title on every node, an
``anyOf`` with ``null`` around every optional field (proto3 JSON omits an unset field; it never sends null), a
``null`` default, and the proto documentation of every nested field. ``compact`` keeps what a schema asserts —
every field name, type, enum value, pattern and required field of the messages it types — and leaves out:

- titles, null branches and empty defaults (nothing a valid message could contain is refused for it);
- descriptions below ``described_depth`` messages: a request's own fields keep theirs (a model needs them to call
  the tool), deeper ones live in the docs;
- the fields of messages nested deeper than ``typed_depth``, which become ``{"type": "object"}``: still exact
  (every value the server sends validates), no longer a full description. Output schemas use this: a client
  checks the result it receives against them and its model reads the result itself, with every field named.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass
from typing import Any

_NULL = {"type": "null"}
_EMPTY_DEFAULTS: tuple[Any, ...] = (None, [], {})
_DEFS = "#/$defs/"


@dataclass(frozen=True)
class SchemaShape:
    described_depth: int
    """Messages whose fields keep their descriptions: 1 is the top message's own fields only."""
    typed_depth: int | None
    """Messages below the top whose fields are typed; deeper ones are plain objects (None: all of them)."""


INPUT_SHAPE = SchemaShape(described_depth=1, typed_depth=None)
"""What a caller writes: every field typed, the request's own fields described."""
OUTPUT_SHAPE = SchemaShape(described_depth=0, typed_depth=1)
"""What a caller gets back: the response's fields and their messages' fields typed."""


def compact(schema: dict[str, Any], shape: SchemaShape) -> dict[str, Any]:
    """``schema`` (pydantic's, with ``$defs``) as small as ``shape`` allows; the input is left untouched."""
    definitions: dict[str, Any] = schema.get("$defs", {})
    kept: dict[str, Any] = {}
    # Breadth first, so a message is shaped at the shallowest depth it is reached from the top.
    pending: deque[tuple[str, int]] = deque()

    def reference(name: str, depth: int, node: dict[str, Any]) -> dict[str, Any]:
        body = definitions[name]
        if not body:
            return {}  # any JSON value (a Struct's values): the empty schema says it without a definition
        is_message = "properties" in body or body.get("type") == "object" and "enum" not in body
        if is_message and shape.typed_depth is not None and depth > shape.typed_depth:
            return {"type": "object"}
        if name not in kept:
            kept[name] = None  # reserved: reached again while pending
            pending.append((name, depth))
        return node

    def shaped(node: Any, depth: int, described: bool) -> Any:
        if isinstance(node, list):
            return [shaped(item, depth, described) for item in node]
        if not isinstance(node, dict):
            return node
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in ("title", "$defs") or key == "description" and not described:
                continue
            if key == "default" and any(value == empty and type(value) is type(empty) for empty in _EMPTY_DEFAULTS):
                continue
            if key == "properties":
                keep = depth < shape.described_depth
                out[key] = {name: shaped(prop, depth, keep) for name, prop in value.items()}
            elif key == "$ref" and isinstance(value, str) and value.startswith(_DEFS):
                out[key] = value
            else:
                out[key] = shaped(value, depth, False)
        if out.get("additionalProperties") == {}:
            del out["additionalProperties"]  # an object with any values: what "type": "object" says alone
        options = out.get("anyOf")
        if isinstance(options, list) and _NULL in options:
            rest = [option for option in options if option != _NULL]
            if len(rest) == 1:
                del out["anyOf"]
                out = {**rest[0], **out}
            else:
                out["anyOf"] = rest
        target = out.get("$ref")
        if isinstance(target, str) and target.startswith(_DEFS):
            replaced = reference(target[len(_DEFS):], depth + 1, out)
            if replaced is not out:
                return {**replaced, **{k: v for k, v in out.items() if k == "description"}}
        return out

    top: dict[str, Any] = shaped(schema, 0, False)
    while pending:
        name, depth = pending.popleft()
        kept[name] = shaped(definitions[name], depth, False)
    if kept:
        top["$defs"] = kept
    return top


def size_of(schema: dict[str, Any]) -> int:
    """Bytes of ``schema`` as a client receives it (compact JSON)."""
    return len(json.dumps(schema, ensure_ascii=False, separators=(",", ":")))
