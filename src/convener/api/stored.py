"""Wire bodies served as they were stored: validated once, when written, and not parsed again to be read.

A service that keeps a resource whole as its proto3 JSON validates it on the way in. Parsing that JSON into
the pydantic model on every read, only to dump the model back to the same JSON, is most of what a list costs
(a page of 20 conversations: ~30 times the SQL). ``StoredBody[M]`` carries the stored JSON text of an ``M``
instead; a response field typed ``list[StoredBody[M]]`` has ``M``'s JSON Schema (so the tool's output schema is
unchanged) and serializes to the stored JSON as it is.
"""

from __future__ import annotations

import json
import re
from typing import Any, Generic, TypeVar, get_args

from pydantic import GetCoreSchemaHandler
from pydantic_core import PydanticCustomError, core_schema

from convener.api.protojson import ProtoModel, wire_integer

M = TypeVar("M", bound=ProtoModel)

_LONG_INTEGER = re.compile(r"\d{16}")
"""Sixteen digits in a row: maybe an integer past 2**53, which only a double can have been (``wire_integer``)."""

class StoredBody(Generic[M]):
    """The proto3 JSON text of a ``kind``, as stored after it was validated: trusted, served without parsing.

    Not a dataclass: pydantic would take a dataclass's fields for its schema, not ``M``'s."""

    __slots__ = ("kind", "text")

    def __init__(self, kind: type[M], text: str) -> None:
        self.kind = kind
        self.text = text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StoredBody) and other.kind is self.kind and other.text == self.text

    def __hash__(self) -> int:
        return hash((self.kind, self.text))

    def __repr__(self) -> str:
        return f"StoredBody[{self.kind.__name__}]({self.text[:60]!r}...)"

    @classmethod
    def of(cls, model: M) -> StoredBody[M]:
        """A model's own wire form (for a body that was not read from the store)."""
        return cls(type(model), json.dumps(model.to_json(), ensure_ascii=False, separators=(",", ":")))

    def to_json(self) -> dict[str, Any]:
        """The JSON object, decoded (the stored text is a JSON object, so this is a dict)."""
        value: dict[str, Any] = json.loads(self.text, parse_int=wire_integer)
        return value

    def parse(self) -> M:
        """The model itself, for code that works on its fields (validates again). Pydantic's JSON parser reads
        the text straight (decoding it into Python objects first cost as much again: a 500-turn conversation,
        79 ms against 61 ms), unless it may hold a number PostgreSQL's JSONB printed as a long integer (1e23 as
        100000000000000000000000): those are read back as the doubles they were, the slower way. Sixteen digits
        inside a string only cost that speed."""
        if _LONG_INTEGER.search(self.text) is None:
            return self.kind.model_validate_json(self.text)
        return self.kind.model_validate(self.to_json())

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        (kind,) = get_args(source) or (None,)
        if not (isinstance(kind, type) and issubclass(kind, ProtoModel)):
            raise TypeError("use StoredBody[SomeModel] with a ProtoModel subclass as the annotation")
        model_schema = handler.generate_schema(kind)

        def validate(value: Any) -> StoredBody[Any]:
            if isinstance(value, StoredBody) and value.kind is kind:
                return value
            if isinstance(value, kind):
                return StoredBody.of(value)
            raise PydanticCustomError("stored_body", "expected a stored {kind}", {"kind": kind.__name__})

        return core_schema.no_info_plain_validator_function(
            validate,
            json_schema_input_schema=model_schema,  # the JSON Schema is the model's: the wire form is the same
            serialization=core_schema.plain_serializer_function_ser_schema(
                lambda stored: stored.to_json(), return_schema=core_schema.dict_schema(), when_used="always"
            ),
        )
