"""proto3 JSON mapping for pydantic models.

Google's wire format: camelCase names, unset fields omitted, enums by name, int64 as strings,
Timestamps in RFC 3339 normalised to ``Z`` with 0, 3, 6 or 9 fractional digits, Durations as
``"3.5s"``, ``google.protobuf.Struct`` as a plain JSON object and bytes as base64.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Self

from pydantic import BaseModel, ConfigDict, GetCoreSchemaHandler, JsonValue, WithJsonSchema
from pydantic.alias_generators import to_camel
from pydantic.functional_serializers import PlainSerializer
from pydantic.functional_validators import AfterValidator, BeforeValidator
from pydantic_core import PydanticCustomError, core_schema

from convener.api.errors import InvalidArgument

_NANOS = 1_000_000_000
_EPOCH = datetime(1970, 1, 1)
_MIN_SECONDS = -62_135_596_800  # 0001-01-01T00:00:00Z
_MAX_SECONDS = 253_402_300_799  # 9999-12-31T23:59:59Z

# Matched with fullmatch and ASCII digits only: "$" admits a trailing newline and "\d" any script's digits.
_RFC3339 = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,9}))?"
    r"(?:[Zz]|([+-])([0-9]{2}):([0-9]{2}))"
)
_EPOCH_DAY = datetime(1970, 1, 1).toordinal()
_DURATION = re.compile(r"(?P<sign>-)?(?P<seconds>[0-9]{1,12})(?:\.(?P<frac>[0-9]{1,9}))?s")
_MAX_DURATION_SECONDS = 315_576_000_000  # 10,000 years, the proto's bound
_INT64 = range(-(2**63), 2**63)


@functools.lru_cache(maxsize=256)
def _date_of(days: int) -> str:
    """The date ``days`` after 1970-01-01, as RFC 3339 writes it."""
    day = _EPOCH + timedelta(days=days)
    return f"{day.year:04d}-{day.month:02d}-{day.day:02d}"


def _fraction_digits(nanos: int) -> str:
    """Shortest of the 0/3/6/9-digit renderings that loses nothing."""
    if nanos == 0:
        return ""
    if nanos % 1_000_000 == 0:
        return f".{nanos // 1_000_000:03d}"
    if nanos % 1_000 == 0:
        return f".{nanos // 1_000:06d}"
    return f".{nanos:09d}"


@dataclass(frozen=True, order=True)
class Timestamp:
    """google.protobuf.Timestamp: seconds since the epoch (UTC) and non-negative nanos."""

    seconds: int
    nanos: int = 0

    @classmethod
    def parse(cls, text: str) -> Self:
        match = _RFC3339.fullmatch(text)
        if match is None:
            raise ValueError(f'"{_clip(text)}" is not an RFC 3339 timestamp such as "2014-10-02T15:01:23Z"')
        year, month, day, hour, minute, second, frac, sign, tz_hours, tz_minutes = match.groups()
        # Whole seconds from the day's ordinal and the clock, not by datetime arithmetic: every span of a
        # recorded conversation has two timestamps, and this was half the time of reading one.
        try:
            wall = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second))
            offset = 0 if sign is None else int(tz_hours) * 3600 + int(tz_minutes) * 60
            if offset >= 86_400:
                raise ValueError("offset out of range")
        except ValueError:
            raise ValueError(f'"{_clip(text)}" is not a valid date and time') from None
        seconds = (wall.toordinal() - _EPOCH_DAY) * 86_400 + wall.hour * 3600 + wall.minute * 60 + wall.second
        seconds += -offset if sign == "+" else offset
        nanos = int(frac.ljust(9, "0")) if frac else 0
        if not _MIN_SECONDS <= seconds <= _MAX_SECONDS:
            raise ValueError(f'"{_clip(text)}" is outside 0001-01-01 to 9999-12-31')
        return cls(seconds, nanos)

    @classmethod
    def from_micros(cls, micros: int) -> Self:
        seconds, micro = divmod(micros, 1_000_000)
        return cls(seconds, micro * 1_000)

    @classmethod
    def now(cls) -> Self:
        return cls.from_micros(int(datetime.now(UTC).timestamp() * 1_000_000))

    def to_micros(self) -> int:
        return self.seconds * 1_000_000 + self.nanos // 1_000

    def __add__(self, other: Duration) -> Timestamp:
        total = self.seconds * _NANOS + self.nanos + other.total_nanos
        return Timestamp(*divmod(total, _NANOS))

    def __sub__(self, other: Timestamp) -> Duration:
        return Duration((self.seconds - other.seconds) * _NANOS + self.nanos - other.nanos)

    def __str__(self) -> str:
        # The day's date once per day seen, the clock by arithmetic: every span of a recorded turn has two
        # timestamps, and formatting each through datetime was a few percent of an evaluation.
        days, clock = divmod(self.seconds, 86_400)
        hours, clock = divmod(clock, 3600)
        minutes, seconds = divmod(clock, 60)
        return f"{_date_of(days)}T{hours:02d}:{minutes:02d}:{seconds:02d}{_fraction_digits(self.nanos)}Z"

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return _string_form_schema(cls, "an RFC 3339 timestamp string")

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: Any, handler: Any) -> dict[str, Any]:
        return {"type": "string", "format": "date-time"}


@dataclass(frozen=True, order=True)
class Duration:
    """google.protobuf.Duration, held as signed nanoseconds; JSON form ``"3.5s"``."""

    total_nanos: int

    @classmethod
    def parse(cls, text: str) -> Self:
        match = _DURATION.fullmatch(text)
        if match is None:
            raise ValueError(f'"{_clip(text)}" is not a duration such as "3.5s"')
        if int(match["seconds"]) > _MAX_DURATION_SECONDS:
            raise ValueError(f'"{_clip(text)}" is longer than 10,000 years')
        nanos = int(match["seconds"]) * _NANOS + int((match["frac"] or "").ljust(9, "0"))
        return cls(-nanos if match["sign"] else nanos)

    @classmethod
    def from_seconds(cls, seconds: float) -> Self:
        return cls(round(seconds * _NANOS))

    def seconds(self) -> float:
        return self.total_nanos / _NANOS

    def __str__(self) -> str:
        sign = "-" if self.total_nanos < 0 else ""
        seconds, nanos = divmod(abs(self.total_nanos), _NANOS)
        return f"{sign}{seconds}{_fraction_digits(nanos)}s"

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return _string_form_schema(cls, 'a duration string such as "3.5s"')

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: Any, handler: Any) -> dict[str, Any]:
        return {"type": "string", "pattern": r"^-?\d+(\.\d{1,9})?s$"}


def _string_form_schema(cls: type[Timestamp] | type[Duration], expected: str) -> core_schema.CoreSchema:
    """Pydantic schema of a value type that travels as a string: parsed on input, ``str()`` on output."""

    def validate(value: Any) -> Timestamp | Duration:
        if isinstance(value, cls):
            return value
        if not isinstance(value, str):
            raise PydanticCustomError("string_form", "expected {expected}", {"expected": expected})
        try:
            return cls.parse(value)
        except ValueError as error:
            raise PydanticCustomError("string_form", "{problem}", {"problem": str(error)}) from None

    return core_schema.no_info_plain_validator_function(
        validate,
        json_schema_input_schema=core_schema.str_schema(),
        serialization=core_schema.plain_serializer_function_ser_schema(str, when_used="always"),
    )


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _check_base64(value: str) -> str:
    try:
        base64.b64decode(value.replace("-", "+").replace("_", "/") + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise PydanticCustomError("base64", "expected base64-encoded bytes") from None
    return value


Bytes = Annotated[str, AfterValidator(_check_base64)]
"""``bytes`` fields travel as base64 text; kept as text, checked on input."""

def _int64(value: Any) -> Any:
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]{1,19}", value):
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and value not in _INT64:
        raise PydanticCustomError("int64", "expected a 64-bit integer")
    return value


Int64 = Annotated[
    int, BeforeValidator(_int64), PlainSerializer(str, return_type=str),
    WithJsonSchema({"anyOf": [{"type": "string", "pattern": "^-?[0-9]{1,19}$"}, {"type": "integer"}]}),
]
"""int64 fields are JSON strings on the wire but accepted as numbers too (and the schema says both)."""

Struct = dict[str, JsonValue]
"""google.protobuf.Struct in its JSON form: an ordinary object."""



_EXACT_INTEGERS = 2**53


def wire_integer(text: str) -> int | float:
    """A JSON integer of a stored proto3 body (``json.loads``' ``parse_int``). Past 2**53 it can only be a double
    (int64 fields are strings, Struct numbers are doubles): PostgreSQL's JSONB prints 1e23 as
    100000000000000000000000, and it was 1e23."""
    value = int(text)
    return value if -_EXACT_INTEGERS <= value <= _EXACT_INTEGERS else float(text)


class ProtoModel(BaseModel):
    """Base of every wire model: camelCase aliases, unknown fields rejected."""

    # A model's validator is built on its first use, not at import: a command builds those of the messages it
    # reads and writes, not those of every service it imports (a third of a second of each command's start).
    # Pydantic takes a lock for a first build (2.14), so threads meeting a model at once wait for one build.
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        defer_build=True,
    )

    def to_json(self) -> dict[str, Any]:
        """The proto3 JSON object: aliases, unset and empty repeated fields omitted."""
        return _omit_empty_repeated(self.model_dump(mode="json", by_alias=True, exclude_none=True), self)

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """The JSON Schema of the wire form; generated once per class (it is costly), copied per caller."""
        copied: dict[str, Any] = json.loads(_schema_of(cls))
        return copied


    @classmethod
    def input_json_schema(cls) -> dict[str, Any]:
        """The JSON Schema a caller writes to: without the output-only fields (results, metrics, snapshots,
        create times) that the service fills in and ignores on input, which would only cost a client's model
        its context. Such fields are still accepted, so a resource read can be sent back as it is."""
        copied: dict[str, Any] = json.loads(_input_schema_of(cls))
        return copied


@functools.cache
def _schema_of(model: type[ProtoModel]) -> str:
    return json.dumps(model.model_json_schema(by_alias=True, mode="validation"))


_OUTPUT_ONLY = "Output only."
_REF = re.compile(r'"#/\$defs/([^"]+)"')


@functools.cache
def _input_schema_of(model: type[ProtoModel]) -> str:
    schema: dict[str, Any] = json.loads(_schema_of(model))
    definitions: dict[str, Any] = schema.get("$defs", {})
    for owner in (schema, *definitions.values()):
        properties = owner.get("properties", {})
        for key in [k for k, prop in properties.items()
                    if str(prop.get("description", "")).startswith(_OUTPUT_ONLY)]:
            del properties[key]
    # Keep the definitions still reachable from the top.
    reachable: set[str] = set()
    pending = set(_REF.findall(json.dumps({k: v for k, v in schema.items() if k != "$defs"})))
    while pending:
        name = pending.pop()
        if name not in reachable and name in definitions:
            reachable.add(name)
            pending.update(_REF.findall(json.dumps(definitions[name])))
    if definitions:
        schema["$defs"] = {name: body for name, body in definitions.items() if name in reachable}
    return json.dumps(schema)


@functools.cache
def _wire_keys(model: type[BaseModel]) -> tuple[tuple[str, str], ...]:
    """(JSON key, attribute) of each field of ``model``."""
    return tuple((info.alias or name, name) for name, info in model.model_fields.items())


def _omit_empty_repeated(data: dict[str, Any], model: BaseModel) -> dict[str, Any]:
    """Drop ``[]`` of the model's own repeated fields (proto3 omits them), recursing into sub-messages.

    Struct contents are left alone: an empty list inside ``args`` is data, not an unset field.
    """
    for key, field_name in _wire_keys(type(model)):
        if key not in data:
            continue
        value = getattr(model, field_name)
        if isinstance(value, list):
            if not value:
                del data[key]
            elif isinstance(value[0], BaseModel):
                data[key] = [_omit_empty_repeated(d, m) for d, m in zip(data[key], value, strict=True)]
        elif isinstance(value, BaseModel):
            data[key] = _omit_empty_repeated(data[key], value)
    return data


def check_storable_json(value: Any, where: str = "request") -> None:
    """Reject what no store can keep: NUL in text (PostgreSQL refuses it), lone surrogates (not
    UTF-8), and NaN or Infinity (not JSON, and not a ``google.protobuf.Value`` number).

    Walks the decoded JSON iteratively, so any depth of nesting is safe.
    """
    stack: list[tuple[str, Any]] = [(where, value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, str):
            texts = [item]
        elif isinstance(item, dict):
            texts = [key for key in item if isinstance(key, str)]
            stack.extend((f"{path}.{key}", child) for key, child in item.items())
        elif isinstance(item, list):
            texts = []
            stack.extend((f"{path}[{index}]", child) for index, child in enumerate(item))
        elif isinstance(item, float) and not math.isfinite(item):
            raise InvalidArgument(f"{path[:200]}: numbers must be finite (NaN and Infinity are not JSON)")
        else:
            continue
        for text in texts:
            if "\x00" in text:
                raise InvalidArgument(f"{path[:200]}: text must not contain NUL characters")
            if _SURROGATE.search(text):
                raise InvalidArgument(f"{path[:200]}: text must be valid Unicode (a lone surrogate was found)")


_SURROGATE = re.compile("[\ud800-\udfff]")


def same_json(left: Any, right: Any) -> bool:
    """Equal as JSON values: PostgreSQL's JSONB hands 1e23 back as the integer 10**23."""
    return bool(_numbers_as_floats(left) == _numbers_as_floats(right))


def _numbers_as_floats(value: Any) -> Any:
    return json.loads(json.dumps(value), parse_int=float)
