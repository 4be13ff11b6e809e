"""A Python tool's parameters as the model is offered them: a JSON Schema from the function's signature."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, create_model

from convener.api.errors import InvalidArgument


def parameters_of(function: Callable[..., Any], field: str) -> dict[str, Any]:
    """A JSON Schema for a Python function's keyword parameters, from its type annotations."""
    try:
        hints = typing.get_type_hints(function)
    except Exception:  # noqa: BLE001 - unresolvable annotations fall back to untyped parameters
        hints = {}
    fields: dict[str, Any] = {}
    for parameter in inspect.signature(function).parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        annotation = hints.get(parameter.name, Any)
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[parameter.name] = (annotation, default)
    try:
        model: type[BaseModel] = create_model(f"{getattr(function, '__name__', 'tool')}_parameters", **fields)
        schema: dict[str, Any] = model.model_json_schema()
    except Exception as error:  # noqa: BLE001 - a signature pydantic cannot describe is the definer's problem
        raise InvalidArgument(f"{field}: cannot derive parameters from the signature: {error}"[:300]) from None
    schema.pop("title", None)
    return schema
