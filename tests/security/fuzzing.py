"""Hostile arguments for any MCP tool, drawn from its own input schema, and the one property every answer keeps.

``arguments(schema, pool)`` gives either a schema-valid call (hypothesis-jsonschema) or that call with some of
its keys and values swapped for hostile ones: wrong types, huge, empty, unicode, NUL and control-character
strings, negative and huge numbers, deep nesting, resource names bent from real ones (``..``, ``%2F``,
wildcards, other projects), SQL and AIP-160 filter fragments, and page tokens that are garbage or from another
query. The ``Pool`` holds the real names and page tokens of the store under test, so calls reach past name
parsing into the services.

``problem(result, validator)`` says what is wrong with an answer, or None: a success must carry
structuredContent valid for the tool's output schema; a failure must be ``CODE: message`` with a google.rpc
code other than INTERNAL, and leak nothing of the implementation.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import jsonschema
import mcp_types as types
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

Json = Any

CODES = ("INVALID_ARGUMENT", "NOT_FOUND", "PERMISSION_DENIED", "FAILED_PRECONDITION", "ALREADY_EXISTS",
         "ABORTED", "OUT_OF_RANGE", "RESOURCE_EXHAUSTED", "DEADLINE_EXCEEDED", "UNAVAILABLE", "UNIMPLEMENTED",
         "UNAUTHENTICATED", "CANCELLED")
"""The google.rpc codes a caller may see; INTERNAL (a bug) and UNKNOWN are not among them."""
ERROR = re.compile(rf"^({'|'.join(CODES)}): ")
LEAK = re.compile(r"Traceback|File \"|Error executing tool|sqlalchemy|sqlite3|psycopg|duckdb\.|"
                  r"\b[A-Z][A-Za-z]*(Error|Exception)\b")
"""What an error text must not contain: a stack trace, the MCP library's fallback text, a driver, or the
name of a Python exception class."""

SQL = ("' OR '1'='1", "'; DROP TABLE apps; --", "\" OR 1=1 --", "1; SELECT * FROM api_keys", "%' --",
       "SELECT name FROM sqlite_master", "UNION SELECT NULL,NULL--", "\\'; --", "$1", "?", ":name")
FILTERS = ('displayName = "x" OR 1=1', "name:*", 'createTime > "not a time"', "(((((", ")", "a AND", "NOT",
           "source = LIVE AND source = SIMULATOR", 'foo.bar.baz = "1"', "x = \"\\", "-", "*", "done=true",
           "done = maybe", "state = RUNNING OR", 'a = "' + "b" * 200 + '"', "a=" + "(" * 300)
TOKENS = ("garbage", "", "====", "AAAA", "eyJhbGciOiJub25lIn0.e30.", "0" * 64, "%00", "\x00", "-1",
          "bm90IGEgdG9rZW4=")
TEXTS = ("", " ", "\x00", "a\x00b", "\x01\x02\x1b[31m\x7f", "\r\n\t", "\u202e\u200b\ufeff", "\ud7ff\ue000",
         "😀" * 50, "Ω≈ç√∫", "ℌ𝔢𝔩𝔩𝔬", "../../../../etc/passwd", "/etc/passwd", "C:\\Windows\\win.ini", "~/.ssh",
         "file:///etc/passwd", "http://127.0.0.1:1/", "sqlite:////etc/passwd", "{{7*7}}", "${jndi:x}", "%s%n",
         "<script>alert(1)</script>", "null", "true", "[]", "{}", "1e309", "-0", "NaN", "*", "-", ".", "..",
         "%2F", "%2e%2e%2f", "spaces/", "users/", "documents/", "projects/-/locations/-", "a" * 64, "A" * 4096,
         "30s", "-1s", "99999999999s", "1e9s", "0.000000001s", "P1D")
HUGE = ("x" * 1_000_000, "é" * 200_000, "\x00" * 100_000)
NUMBERS = (0, -1, 1, 2, -(2 ** 31), 2 ** 31, 2 ** 53 + 1, 2 ** 63, -(2 ** 63) - 1, 10 ** 30, 0.5, -0.0, 1e308,
           -1e308)


@dataclass
class Pool:
    """Real names and page tokens of the store under test; the hostile values are bent from them."""

    names: list[str] = field(default_factory=list)
    tokens: list[str] = field(default_factory=list)

    def add(self, document: Json) -> None:
        """Every name and page token anywhere in a tool's answer."""
        for key, value in _walk(document):
            if not isinstance(value, str) or not value:
                continue
            if key in ("nextPageToken", "next_page_token"):
                self.tokens.append(value)
            elif "/" in value and len(value) < 300 and not value.startswith(("http", "/")) and " " not in value:
                self.names.append(value)

    def settle(self) -> None:
        self.names = sorted(set(self.names))[:400]
        self.tokens = sorted(set(self.tokens))[:50]


def _walk(document: Json, key: str = "") -> Iterable[tuple[str, Json]]:
    if isinstance(document, dict):
        for name, value in document.items():
            yield from _walk(value, name)
    elif isinstance(document, list):
        for value in document:
            yield from _walk(value, key)
    else:
        yield key, document


def bent(name: str) -> list[str]:
    """A real resource name, bent the ways an attacker bends one."""
    parts = name.split("/")
    other = "/".join(["projects", "other", *parts[2:]]) if parts[0] == "projects" and len(parts) > 2 else name
    return [name, name + "/..", name + "/../..", name.replace("/", "%2F"), "/".join([*parts[:-1], "*"]),
            "/".join([*parts[:-1], "-"]), "/".join([*parts[:-1], ".."]), other, name + "/extra", name + "\x00",
            name.upper(), name + "/", "/" + name, name.replace("/", "//"), " " + name, name + "?x=1", name + "#"]


def strings(pool: Pool) -> st.SearchStrategy[str]:
    """Strings a caller could send where the schema asks for one."""
    choices: list[st.SearchStrategy[str]] = [
        st.sampled_from(TEXTS), st.sampled_from(SQL), st.sampled_from(FILTERS), st.sampled_from(TOKENS),
        st.text(max_size=40),
        st.text(st.characters(codec="utf-8", categories=("Cc", "Cf", "Zs", "So")), max_size=20),
        st.sampled_from(HUGE),
    ]
    if pool.names:
        choices.append(st.sampled_from(pool.names).flatmap(lambda name: st.sampled_from(bent(name))))
        choices.append(st.sampled_from(pool.names))
    if pool.tokens:
        choices.append(st.sampled_from(pool.tokens))
    return st.one_of(*choices)


def nested(depth: int) -> Json:
    value: Json = "deep"
    for level in range(depth):
        value = [value] if level % 2 else {"a": value}
    return value


def hostile(pool: Pool) -> st.SearchStrategy[Json]:
    """Any JSON value that could stand where another was expected: a hostile string, or the wrong type."""
    return st.one_of(
        strings(pool),
        st.sampled_from(NUMBERS),
        st.booleans(),
        st.none(),
        st.sampled_from([[], {}, [None], {"": ""}, {"\x00": 1}, [[[]]]]),
        st.sampled_from([nested(30), nested(150)]),
        st.lists(strings(pool), max_size=3),
        st.dictionaries(st.text(max_size=10), strings(pool), max_size=3),
        st.just(["x"] * 10_000),
    )


def _mutate(value: Json, draw: st.DrawFn, pool: Pool, percent: int, depth: int = 0) -> Json:
    """The value with some leaves, keys and members swapped for hostile ones (``percent`` of them)."""
    def chance(share: int) -> bool:
        return draw(st.integers(0, 99)) < share

    if depth > 0 and chance(percent):
        return draw(hostile(pool))
    if isinstance(value, dict):
        mutated = {key: _mutate(item, draw, pool, percent, depth + 1) for key, item in value.items()}
        if value and chance(percent // 2):
            mutated.pop(draw(st.sampled_from(sorted(value))))  # a required key may go
        if chance(percent // 3):
            mutated[draw(st.sampled_from(["unknownField", "__proto__", "name", "", "\x01"]))] = draw(hostile(pool))
        return mutated
    if isinstance(value, list):
        return [_mutate(item, draw, pool, percent, depth + 1) for item in value]
    return value


RECURSION = 2
"""How many times one definition may nest in itself (CES's Schema does) before the fuzz stops descending."""
ANY_JSON: st.SearchStrategy[Json] = st.recursive(
    st.none() | st.booleans() | st.integers(-10, 10) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=5), inner, max_size=2),
    max_leaves=4)


def valid_values(schema: dict[str, Any], defs: dict[str, Any], seen: tuple[str, ...] = (),
                 pool: Pool | None = None) -> st.SearchStrategy[Json] | None:
    """Values valid for a pydantic-made JSON Schema; None where a recursive definition has nested deep enough.

    Objects, arrays, unions and references are walked here, so that recursion is bounded; scalars (patterns,
    formats, bounds) come from hypothesis-jsonschema. (Its own object generation relies on Hypothesis
    internals that newer Hypothesis releases changed.) With a pool, a nested field whose description shows a
    resource name's format (``app.rootAgent``, ``evaluation.name``) also takes the pool's names of that kind.
    """
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        if seen.count(name) >= RECURSION:
            return None
        return valid_values(defs[name], defs, (*seen, name), pool)
    for union in ("anyOf", "oneOf"):
        if union in schema:
            found = (valid_values(sub, defs, seen, pool) for sub in schema[union])
            options = [option for option in found if option is not None]
            return st.one_of(*options) if options else None
    if "allOf" in schema and len(schema["allOf"]) == 1:
        return valid_values(schema["allOf"][0], defs, seen, pool)
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "const" in schema:
        return st.just(schema["const"])
    kind = schema.get("type")
    if kind == "object":
        return _objects(schema, defs, seen, pool)
    if kind == "array":
        items = valid_values(schema.get("items", {}), defs, seen, pool)
        return st.lists(items, max_size=3) if items is not None else st.just([])
    if kind is None:
        return ANY_JSON
    leaf = {key: value for key, value in schema.items() if key not in ("title", "description", "default")}
    strategy: st.SearchStrategy[Json] = from_schema(leaf, allow_x00=False, codec="utf-8")
    return strategy


def _objects(schema: dict[str, Any], defs: dict[str, Any], seen: tuple[str, ...], pool: Pool | None
             ) -> st.SearchStrategy[Json]:
    required = set(schema.get("required", ()))
    fields: dict[str, st.SearchStrategy[Json]] = {}
    for key, sub in schema.get("properties", {}).items():
        strategy = valid_values(sub, defs, seen, pool)
        names = fitting(pool, key, sub.get("description", ""), fallback=False) if pool and seen else []
        if strategy is not None and names:
            strategy = st.one_of(st.sampled_from(names), strategy)
        fields[key] = strategy if strategy is not None else st.none()
    extra = schema.get("additionalProperties")
    extras = valid_values(extra, defs, seen, pool) if isinstance(extra, dict) else None

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        value = {key: draw(strategy) for key, strategy in fields.items() if key in required or draw(st.booleans())}
        if extras is not None:
            value.update(draw(st.dictionaries(st.text(min_size=1, max_size=8), extras, max_size=2)))
        return value

    return build()


def arguments(schema: dict[str, Any], pool: Pool) -> st.SearchStrategy[dict[str, Any]]:
    """Arguments for a tool with this input schema: valid ones, valid ones naming real resources of the kind
    each field asks for, and those made hostile."""
    valid = valid_values(schema, schema.get("$defs", {}), pool=pool)
    assert valid is not None
    fields = {key: fitting(pool, key, sub.get("description", ""))
              for key, sub in _string_properties(schema).items()}

    @st.composite
    def named(draw: st.DrawFn, percent: int) -> dict[str, Any]:
        base = draw(valid)
        for key, names in fields.items():  # real names reach past parsing, into the services
            if names and (key in base or key in schema.get("required", ())) and draw(st.integers(0, 3)):
                base[key] = draw(st.sampled_from(names))
            elif key in base and draw(st.booleans()):
                base[key] = draw(strings(pool))
        mutated: dict[str, Any] = _mutate(base, draw, pool, percent)
        return mutated

    return st.one_of(valid, named(0), named(0), st.sampled_from([10, 30, 60]).flatmap(named))


TEMPLATE = re.compile(r"(?:projects|spaces|users|documents)/[\w{}/.-]*|…/[\w{}/.-]*")


def fitting(pool: Pool, key: str, description: str, fallback: bool = True) -> list[str]:
    """The pool's names of the kind a field's description shows (``projects/{project}/…/agents/{agent}``);
    for a field that takes an ID, the IDs of the pool's names; for a page token, real page tokens."""
    if "token" in key.lower():
        return pool.tokens
    if key.lower() in ("filter", "orderby", "order_by", "query") or "time" in key.lower():
        return []
    patterns = [re.compile(("(?:.+/)?" if found.startswith("…") else "")
                           + re.sub(r"\\{\w+\\}", "[^/]+", re.escape(found.lstrip("…/").rstrip("/.")))
                           + "(?:/-)?")
                for found in TEMPLATE.findall(description)]
    if patterns:
        return [name for name in pool.names if any(pattern.fullmatch(name) for pattern in patterns)]
    if not fallback:
        return []
    if "ID" in description or "name" in description.lower():
        return sorted({name.rsplit("/", 1)[-1] for name in pool.names})[:200]
    return pool.names


def _string_properties(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Top-level properties that take a string (names, parents, queries, tokens, filters)."""
    found = {}
    for key, sub in schema.get("properties", {}).items():
        options = sub.get("anyOf", [sub])
        if any(option.get("type") == "string" and "enum" not in option for option in options):
            found[key] = sub
    return found


def _strings_in(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings_in(item)


def problem(result: types.CallToolResult, validator: jsonschema.protocols.Validator | None,
            arguments: Any = None) -> str | None:
    """What breaks the property in this answer, or None when it holds. An error may quote what the caller sent
    (``arguments``): a name such as "UndefinedError" echoed back leaks nothing."""
    if result.is_error:
        texts = [item.text for item in result.content if isinstance(item, types.TextContent)]
        if len(texts) != 1:
            return f"an error result has {len(texts)} text parts"
        if not ERROR.match(texts[0]):
            return f"the error is not a google.rpc 'CODE: message': {texts[0][:500]!r}"
        own = texts[0]
        for sent in sorted(set(_strings_in(arguments)), key=len, reverse=True):
            if len(sent) >= 3:
                own = own.replace(sent, "")
        if LEAK.search(own):
            return f"the error leaks the implementation: {texts[0][:500]!r}"
        return None
    if result.structured_content is None:
        return "a success without structuredContent"
    if validator is not None:
        error = jsonschema.exceptions.best_match(validator.iter_errors(result.structured_content))
        if error is not None:
            return f"structuredContent does not match the output schema: {error.message[:500]}"
    return None
