"""CES Schemas as JSON Schema: checking a declared schema, and a value against one."""

from __future__ import annotations

from typing import Any

from convener.api.errors import InvalidArgument
from convener.ces.models import Schema


# jsonschema is imported where a schema is checked (writing a definition), not with this module: running
# agents and evaluations checks none, and importing it cost each command a tenth of a second.


def check_json_schema(schema: Schema | None, field: str) -> None:
    if schema is None:
        return
    import jsonschema

    try:
        jsonschema.Draft202012Validator.check_schema(schema.to_json_schema())
    except jsonschema.SchemaError as error:
        raise InvalidArgument(f"{field}: not a valid schema: {error.message[:200]}") from None


def jsonschema_problem(value: Any, schema: Schema) -> str | None:
    """Why ``value`` does not fit ``schema``, or None when it does."""
    import jsonschema

    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema.to_json_schema()).iter_errors(value))
    if error is None:
        return None
    where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error.absolute_path)
    return f"{where.lstrip('.') or 'value'}: {error.message[:200]}"
