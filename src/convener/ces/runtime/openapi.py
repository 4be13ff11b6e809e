"""An ``openApiTool``: one operation of an OpenAPI 3 document, called over HTTP.

CES's openApiTool carries the whole document (``openApiSchema``, JSON or YAML text), the ``name`` of the
operation to expose (its operationId; optional when the document has a single operation), a ``description``,
a ``url`` that overrides the document's servers, and ``ignoreUnknownFields``. Convener also accepts an
``http(s)://`` URL in place of the text, fetched once when the tool is created or updated.

``parse_operation`` runs at definition time and raises ``InvalidArgument`` naming the field it was given;
everything it needs at call time is resolved then (local ``$ref`` s inlined, the server URL chosen), so
``call_operation`` never looks at the document again and reports every problem as a ``ToolFailure``.
"""

from __future__ import annotations

import copy
import datetime
import functools
import json
import re
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx
import yaml

from convener.api.errors import InvalidArgument
from convener.ces.runtime.failures import ToolFailure

MAX_DOCUMENT_BYTES = 2 * 1024 * 1024
"""Largest document accepted, as text or fetched; real API descriptions are far smaller."""

MAX_RESPONSE_BYTES = 1024 * 1024
"""Most of a response read; a larger successful answer is refused rather than truncated into invalid JSON."""

MAX_REF_DEPTH = 32
"""Longest chain of ``$ref`` s followed from one schema."""

MAX_NESTING = 100
"""Deepest nesting of a schema (objects and arrays, after inlining); deeper ones are hostile or a mistake."""

MAX_SCHEMA_NODES = 50_000
"""Most schema nodes inlined for one operation, so shared ``$ref`` s (or YAML aliases) cannot blow up."""

ERROR_EXCERPT = 300
"""Characters of an error response's body quoted in the ToolFailure."""

HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
PARAMETER_LOCATIONS = ("path", "query", "header")
IGNORED_HEADERS = frozenset({"accept", "content-type", "authorization"})
"""Header parameters OpenAPI says to ignore: the client sets these itself."""

BODY_ARGUMENT = "body"
"""The argument holding the request body when its properties cannot be merged with the parameters."""

_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's safe loader when PyYAML was built with it: several times faster on big documents."""

_TEMPLATE_VARIABLE = re.compile(r"\{([^{}]+)\}")


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class OpenApiParameter:
    """A path, query or header parameter, with its schema's ``$ref`` s inlined."""

    name: str
    location: str
    """``path``, ``query`` or ``header``."""
    required: bool
    schema: dict[str, Any]
    description: str = ""


@dataclass(frozen=True)
class OpenApiOperation:
    """Everything needed to call one operation, with no reference back to the document.

    Treat the schemas as read-only: parsed operations of text documents are cached and shared.
    """

    operation_id: str
    description: str
    method: str
    """Upper case: ``GET``, ``POST``, ..."""
    server_url: str
    """Absolute http(s) URL the path is appended to."""
    path: str
    """The path template, such as ``/pets/{petId}``."""
    parameters: tuple[OpenApiParameter, ...]
    body_schema: dict[str, Any] | None
    """Schema of the ``application/json`` request body, or None when the operation takes no body."""
    body_required: bool = False

    @property
    def body_merged(self) -> bool:
        """Whether the body's properties are arguments of their own (else the body is the ``body`` argument).

        Merging gives the model a flat argument list, as a human reading the API would see it. It is only
        possible when the body is a plain object schema (``properties`` and no ``allOf``/``oneOf``/``anyOf``)
        whose property names do not clash with a parameter's; any other body is passed whole as ``body``.
        """
        schema = self.body_schema
        if schema is None or not isinstance(schema.get("properties"), dict):
            return False
        if schema.get("type", "object") != "object":
            return False
        if any(keyword in schema for keyword in ("allOf", "oneOf", "anyOf", "not")):
            return False
        names = {parameter.name for parameter in self.parameters}
        return not names.intersection(schema["properties"])

    def arguments_schema(self) -> dict[str, Any]:
        """One JSON Schema object for the model to fill: the parameters, then the body (see ``body_merged``).

        A fresh copy each time, so callers may annotate it.
        """
        properties: dict[str, Any] = {}
        required: list[str] = []
        for parameter in self.parameters:
            schema = copy.deepcopy(parameter.schema)
            if parameter.description and "description" not in schema:
                schema["description"] = parameter.description
            properties[parameter.name] = schema
            if parameter.required:
                required.append(parameter.name)
        if self.body_schema is not None:
            if self.body_merged:
                properties.update(copy.deepcopy(self.body_schema["properties"]))
                if self.body_required:
                    body_required = self.body_schema.get("required")
                    if isinstance(body_required, list):
                        required.extend(n for n in body_required if n in properties and n not in required)
            else:
                schema = copy.deepcopy(self.body_schema)
                schema.setdefault("description", "The JSON request body.")
                properties[BODY_ARGUMENT] = schema
                if self.body_required:
                    required.append(BODY_ARGUMENT)
        result: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            result["required"] = required
        return result

    def to_json(self) -> dict[str, Any]:
        """A JSON-compatible form to store with the tool, so calls need not parse or fetch the document."""
        return {
            "operationId": self.operation_id,
            "description": self.description,
            "method": self.method,
            "serverUrl": self.server_url,
            "path": self.path,
            "parameters": [
                {
                    "name": p.name,
                    "in": p.location,
                    "required": p.required,
                    "schema": copy.deepcopy(p.schema),
                    "description": p.description,
                }
                for p in self.parameters
            ],
            "bodySchema": copy.deepcopy(self.body_schema),
            "bodyRequired": self.body_required,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> OpenApiOperation:
        """The operation ``to_json`` produced; ``ToolFailure`` INTERNAL if the stored form is damaged."""
        try:
            parameters = tuple(
                OpenApiParameter(
                    name=str(p["name"]),
                    location=str(p["in"]),
                    required=bool(p["required"]),
                    schema=dict(p["schema"]),
                    description=str(p.get("description", "")),
                )
                for p in data["parameters"]
            )
            body = data.get("bodySchema")
            return cls(
                operation_id=str(data["operationId"]),
                description=str(data.get("description", "")),
                method=str(data["method"]),
                server_url=str(data["serverUrl"]),
                path=str(data["path"]),
                parameters=parameters,
                body_schema=None if body is None else dict(body),
                body_required=bool(data.get("bodyRequired", False)),
            )
        except (KeyError, TypeError, ValueError, AttributeError):
            raise ToolFailure(
                "the stored OpenAPI operation is damaged; update the tool to parse its schema again",
                code="INTERNAL",
            ) from None


# ---------------------------------------------------------------- definition time


def parse_operation(
    schema_text: str, *, name: str | None, url: str | None, field: str, fetch_timeout: float = 10.0
) -> OpenApiOperation:
    """The operation of ``schema_text`` (a document, or an http(s) URL of one) that the tool exposes.

    ``name`` picks the operation by operationId (optional when there is only one); ``url`` overrides the
    document's servers. Raises ``InvalidArgument`` naming ``field`` for anything wrong with the document.
    Parsing a text document is cached (the runtime may parse per call); a URL is fetched every time, so
    store ``to_json()`` rather than parse a URL per call.
    """
    text = schema_text.strip()
    if "\n" not in text and re.match(r"https?://", text, re.IGNORECASE):
        body, document_url = _fetch(text, field, fetch_timeout)
        return _operation(_load(body, field), name=name, url=url, base_url=document_url, field=field)
    return _parse_text(schema_text, name, url, field)


@functools.lru_cache(maxsize=32)
def _parse_text(schema_text: str, name: str | None, url: str | None, field: str) -> OpenApiOperation:
    if len(schema_text) > MAX_DOCUMENT_BYTES:
        raise InvalidArgument(f"{field} is longer than {MAX_DOCUMENT_BYTES // (1024 * 1024)} MB")
    return _operation(_load(schema_text, field), name=name, url=url, base_url=None, field=field)


def _fetch(url: str, field: str, timeout: float) -> tuple[bytes, str]:
    """The document at ``url``, and its final URL (after redirects) for resolving relative server URLs."""
    headers = {"Accept": "application/json, application/yaml;q=0.9, */*;q=0.5", "User-Agent": "convener"}
    deadline = time.monotonic() + timeout
    try:
        with httpx.Client(timeout=timeout, follow_redirects=True, headers=headers) as client:
            with client.stream("GET", url) as response:
                if not response.is_success:
                    status = f"{response.status_code} {response.reason_phrase}".strip()
                    raise InvalidArgument(f"{field}: fetching {_clip(url)} returned HTTP {status}")
                data = bytearray()
                for chunk in response.iter_bytes():
                    data += chunk
                    if len(data) > MAX_DOCUMENT_BYTES:
                        raise InvalidArgument(
                            f"{field}: the document at {_clip(url)} is larger than "
                            f"{MAX_DOCUMENT_BYTES // (1024 * 1024)} MB"
                        )
                    if time.monotonic() > deadline:
                        raise httpx.ReadTimeout("the document took too long to download")
                return bytes(data), str(response.url)
    except httpx.TimeoutException:
        raise InvalidArgument(f"{field}: fetching {_clip(url)} took longer than {timeout:g} s") from None
    except (httpx.HTTPError, httpx.InvalidURL) as error:
        raise InvalidArgument(
            f"{field}: cannot fetch {_clip(url)}: {type(error).__name__}: {_clip(str(error))}"
        ) from None


def _load(source: str | bytes, field: str) -> Any:
    """The parsed JSON or YAML; JSON goes through the json module, much faster than any YAML loader."""
    if isinstance(source, bytes):
        try:
            source = source.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise InvalidArgument(f"{field}: the document is not UTF-8 text") from None
    if source.lstrip().startswith("{"):
        try:
            return json.loads(source)
        except (ValueError, RecursionError):
            pass  # YAML accepts a little more (comments) and reports where the problem is
    try:
        return yaml.load(source, Loader=_LOADER)  # noqa: S506 - a safe loader
    except yaml.YAMLError as error:
        raise InvalidArgument(f"{field} is neither JSON nor YAML: {_yaml_problem(error)}") from None
    except RecursionError:
        raise InvalidArgument(f"{field}: the document is nested too deeply") from None


def _yaml_problem(error: yaml.YAMLError) -> str:
    """What went wrong and where, without PyYAML's quote of the offending line.

    A fetched document may come from anywhere the server can reach, so its text is never echoed to the caller.
    """
    if isinstance(error, yaml.MarkedYAMLError) and error.problem:
        mark = error.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        return _clip(" ".join(error.problem.split()), 120) + where
    if isinstance(error, yaml.reader.ReaderError):  # a character YAML does not allow, such as a control character
        return f"character U+{error.character:04X} at position {error.position} is not allowed in YAML"
    return "the document is malformed"


class _Resolver:
    """Inlines local ``$ref`` s into JSON-compatible copies, with caps on depth and size."""

    def __init__(self, document: dict[str, Any], field: str) -> None:
        self.document = document
        self.field = field
        self.nodes = 0

    def target(self, ref: object) -> Any:
        """What a local ``$ref`` (``#/components/...``, a JSON pointer) points at."""
        if not isinstance(ref, str) or not ref.startswith("#/"):
            raise InvalidArgument(
                f'{self.field}: $ref "{_clip(str(ref))}" is not local; only references into the same '
                "document (#/components/...) are supported"
            )
        node: Any = self.document
        for raw in ref[2:].split("/"):
            token = urllib.parse.unquote(raw).replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and token in node:
                node = node[token]
            elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
                node = node[int(token)]
            else:
                raise InvalidArgument(f'{self.field}: $ref "{_clip(ref)}" points at nothing in the document')
        return node

    def object(self, node: Any, what: str) -> dict[str, Any]:
        """A parameter or request body object, following its ``$ref`` s (but not inlining inside it)."""
        for _ in range(MAX_REF_DEPTH):
            if not isinstance(node, dict):
                raise InvalidArgument(f"{self.field}: {what} must be an object")
            if "$ref" not in node:
                return node
            node = self.target(node["$ref"])
        raise InvalidArgument(f"{self.field}: {what} has a chain of more than {MAX_REF_DEPTH} $refs")

    def inline(self, node: Any, chain: tuple[str, ...] = (), depth: int = 0) -> Any:
        """``node`` with every ``$ref`` replaced by its target; a recursive schema stops at the repetition."""
        self.nodes += 1
        if self.nodes > MAX_SCHEMA_NODES:
            raise InvalidArgument(
                f"{self.field}: the operation's schemas expand to more than {MAX_SCHEMA_NODES} nodes"
            )
        if depth > MAX_NESTING:
            raise InvalidArgument(f"{self.field}: a schema is nested more than {MAX_NESTING} levels deep")
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                if ref in chain:  # a recursive schema (a tree node, say): below here any value is accepted
                    return {"description": f"(recursive: {_clip(ref, 100)}, not expanded)"}
                if len(chain) >= MAX_REF_DEPTH:
                    raise InvalidArgument(f"{self.field}: a schema follows more than {MAX_REF_DEPTH} $refs")
                resolved = self.inline(self.target(ref), (*chain, ref), depth)
                siblings = {str(k): self.inline(v, chain, depth + 1) for k, v in node.items() if k != "$ref"}
                return {**resolved, **siblings} if siblings and isinstance(resolved, dict) else resolved
            return {str(key): self.inline(value, chain, depth + 1) for key, value in node.items()}
        if isinstance(node, (list, tuple)):
            return [self.inline(item, chain, depth + 1) for item in node]
        if node is None or isinstance(node, (str, bool, int, float)):
            return node
        if isinstance(node, (datetime.date, datetime.datetime)):  # YAML reads 2024-01-01 as a date
            return node.isoformat()
        return str(node)


def _operation(
    document: Any, *, name: str | None, url: str | None, base_url: str | None, field: str
) -> OpenApiOperation:
    if not isinstance(document, dict):
        if isinstance(document, str) and re.match(r"[a-z][a-z0-9+.-]*://", document.strip(), re.IGNORECASE):
            raise InvalidArgument(f"{field}: only http:// and https:// URLs of documents can be fetched")
        raise InvalidArgument(f"{field} is not an OpenAPI document (expected an object at the top level)")
    if "swagger" in document:
        raise InvalidArgument(f"{field}: Swagger 2.0 documents are not supported; convert it to OpenAPI 3")
    version = document.get("openapi")
    if version is None or not str(version).startswith("3."):
        raise InvalidArgument(f'{field}: "openapi" must be a 3.x version (got {_clip(repr(version), 40)})')
    paths = document.get("paths")
    if not isinstance(paths, dict) or not paths:
        raise InvalidArgument(f'{field}: the document has no "paths"')
    resolver = _Resolver(document, field)

    candidates: list[tuple[str, str, dict[str, Any], dict[str, Any]]] = []
    for path, raw_item in paths.items():
        item = resolver.object(raw_item, f'paths["{_clip(str(path), 80)}"]')
        for method in HTTP_METHODS:
            if method in item:
                operation = item[method]
                if not isinstance(operation, dict):
                    where = f"{method.upper()} {_clip(str(path), 80)}"
                    raise InvalidArgument(f"{field}: {where} must be an object")
                candidates.append((str(path), method, operation, item))
    if not candidates:
        raise InvalidArgument(f"{field}: the document has no operations")

    def label(candidate: tuple[str, str, dict[str, Any], dict[str, Any]]) -> str:
        path, method, operation, _ = candidate
        operation_id = operation.get("operationId")
        return str(operation_id) if operation_id else f"{method.upper()} {path} (no operationId)"

    available = ", ".join(_clip(label(c), 80) for c in candidates[:30])
    available += ", ..." if len(candidates) > 30 else ""
    if name:
        chosen = [c for c in candidates if c[2].get("operationId") == name]
        if not chosen:
            raise InvalidArgument(
                f'{field}: no operation has operationId "{_clip(name, 100)}"; the document has: {available}'
            )
        if len(chosen) > 1:
            where = ", ".join(f"{m.upper()} {p}" for p, m, _, _ in chosen[:5])
            raise InvalidArgument(
                f'{field}: operationId "{_clip(name, 100)}" is used by {len(chosen)} operations '
                f"({_clip(where)}); operationIds must be unique"
            )
    else:
        chosen = candidates
        if len(chosen) > 1:
            raise InvalidArgument(
                f"{field}: the document has {len(chosen)} operations; set name to the operationId of the one "
                f"this tool calls: {available}"
            )
    path, method, operation, item = chosen[0]
    operation_id = str(operation.get("operationId") or re.sub(r"\W+", "_", f"{method}_{path}").strip("_"))
    description = next(
        (str(text) for text in (operation.get("description"), operation.get("summary"),
                                item.get("description"), item.get("summary")) if text),
        "",
    )
    parameters = _parameters(resolver, item, operation, path, field)
    body_schema, body_required = _request_body(resolver, operation, field)
    server_url = _server_url(document, item, operation, url=url, base_url=base_url, field=field)
    parsed = OpenApiOperation(
        operation_id=operation_id,
        description=description,
        method=method.upper(),
        server_url=server_url,
        path=path,
        parameters=parameters,
        body_schema=body_schema,
        body_required=body_required,
    )
    body_argument_taken = any(p.name == BODY_ARGUMENT for p in parameters)
    if body_schema is not None and not parsed.body_merged and body_argument_taken:
        raise InvalidArgument(
            f'{field}: a parameter is named "{BODY_ARGUMENT}", which Convener needs for the request body'
        )
    return parsed


def _parameters(
    resolver: _Resolver, item: dict[str, Any], operation: dict[str, Any], path: str, field: str
) -> tuple[OpenApiParameter, ...]:
    """The path item's parameters overridden by the operation's (same name and location), as OpenAPI says."""
    raw: list[Any] = []
    for owner in (item, operation):
        listed = owner.get("parameters") or []
        if not isinstance(listed, list):
            raise InvalidArgument(f'{field}: "parameters" of {path} must be a list')
        raw.extend(listed)
    by_key: dict[tuple[str, str], dict[str, Any]] = {}
    for entry in raw:
        parameter = resolver.object(entry, f"a parameter of {_clip(path, 80)}")
        name, location = parameter.get("name"), parameter.get("in")
        if not isinstance(name, str) or not name:
            raise InvalidArgument(f"{field}: a parameter of {_clip(path, 80)} has no name")
        if location not in PARAMETER_LOCATIONS:
            raise InvalidArgument(
                f'{field}: parameter "{_clip(name, 80)}" is in {_clip(repr(location), 40)}; only path, '
                "query and header parameters are supported"
            )
        if location == "header" and name.lower() in IGNORED_HEADERS:
            continue
        by_key[(name, location)] = parameter
    parameters: list[OpenApiParameter] = []
    seen: dict[str, str] = {}
    for (name, location), parameter in by_key.items():
        if name in seen:
            raise InvalidArgument(
                f'{field}: parameter "{_clip(name, 80)}" is both a {seen[name]} and a {location} parameter; '
                "their arguments would have the same name"
            )
        seen[name] = location
        schema: Any = parameter.get("schema")
        content = parameter.get("content")
        if schema is None and isinstance(content, dict) and content:
            first = next(iter(content.values()))
            schema = first.get("schema") if isinstance(first, dict) else None
        inlined = resolver.inline(schema if schema is not None else {"type": "string"})
        if not isinstance(inlined, dict):
            raise InvalidArgument(f'{field}: the schema of parameter "{_clip(name, 80)}" must be an object')
        parameters.append(
            OpenApiParameter(
                name=name,
                location=location,
                required=location == "path" or bool(parameter.get("required")),
                schema=inlined,
                description=str(parameter.get("description") or ""),
            )
        )
    path_names = {p.name for p in parameters if p.location == "path"}
    for variable in _TEMPLATE_VARIABLE.findall(path):
        if variable not in path_names:
            raise InvalidArgument(
                f'{field}: path {_clip(path, 80)} has {{{variable}}} but no path parameter "{variable}"'
            )
    return tuple(parameters)


def _request_body(
    resolver: _Resolver, operation: dict[str, Any], field: str
) -> tuple[dict[str, Any] | None, bool]:
    raw = operation.get("requestBody")
    if raw is None:
        return None, False
    body = resolver.object(raw, "requestBody")
    content = body.get("content")
    if not isinstance(content, dict) or not content:
        raise InvalidArgument(f'{field}: requestBody has no "content"')

    def is_json(media_type: str) -> bool:
        base = media_type.split(";")[0].strip().lower()
        return base == "application/json" or (base.startswith("application/") and base.endswith("+json"))

    exact = (m for m in content if str(m).split(";")[0].strip().lower() == "application/json")
    media_type = next(exact, None) or next((m for m in content if is_json(str(m))), None)
    if media_type is None:
        listed = ", ".join(str(m) for m in content)
        raise InvalidArgument(
            f"{field}: the request body must be application/json (the operation accepts {_clip(listed, 120)})"
        )
    media = content[media_type]
    schema = media.get("schema") if isinstance(media, dict) else None
    inlined = resolver.inline(schema if schema is not None else {})
    if not isinstance(inlined, dict):
        raise InvalidArgument(f"{field}: the request body's schema must be an object")
    return inlined, bool(body.get("required"))


def _server_url(
    document: dict[str, Any],
    item: dict[str, Any],
    operation: dict[str, Any],
    *,
    url: str | None,
    base_url: str | None,
    field: str,
) -> str:
    """The override, else the first server of the operation, its path or the document (in that order)."""
    if url and url.strip():
        server = url.strip()
        source = "url"
    else:
        servers = operation.get("servers") or item.get("servers") or document.get("servers")
        if servers is None and base_url is not None:
            servers = [{"url": "/"}]  # OpenAPI's default server: the document's own location
        if not isinstance(servers, list) or not servers:
            raise InvalidArgument(f'{field}: the document lists no "servers"; set url to the API\'s address')
        first = servers[0]
        if not isinstance(first, dict) or not isinstance(first.get("url"), str):
            raise InvalidArgument(f'{field}: servers[0] has no "url"')
        server = first["url"]
        variables = first.get("variables")
        if isinstance(variables, dict):
            for variable, spec in variables.items():
                default = spec.get("default") if isinstance(spec, dict) else None
                if default is not None:
                    server = server.replace(f"{{{variable}}}", str(default))
        source = "servers[0].url"
    if base_url is not None:
        server = urllib.parse.urljoin(base_url, server)
    parts = urllib.parse.urlsplit(server)
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        hint = "" if source == "url" else "; set url to the API's absolute address"
        raise InvalidArgument(
            f'{field}: {source} "{_clip(server, 120)}" is not an absolute http(s) URL{hint}'
        )
    if _TEMPLATE_VARIABLE.search(server):
        raise InvalidArgument(f'{field}: {source} "{_clip(server, 120)}" has a variable with no default')
    return server


# ---------------------------------------------------------------- call time


def _text(value: Any) -> str:
    """A parameter value as it goes into a URL or a header: JSON's spelling for booleans and structures."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _status_code(status: int) -> str:
    """The google.rpc code of an HTTP status, after google.rpc's own HTTP mapping."""
    named = {
        400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
        408: "DEADLINE_EXCEEDED", 409: "ABORTED", 412: "FAILED_PRECONDITION", 429: "RESOURCE_EXHAUSTED",
        501: "UNIMPLEMENTED", 504: "DEADLINE_EXCEEDED",
    }
    if status in named:
        return named[status]
    if 400 <= status < 500:
        return "INVALID_ARGUMENT"
    if status >= 500:
        return "UNAVAILABLE"
    return "UNKNOWN"


@dataclass(frozen=True)
class _Request:
    url: httpx.URL
    headers: dict[str, str]
    body: Any
    has_body: bool


def _build_request(
    op: OpenApiOperation, args: Mapping[str, Any], headers: Mapping[str, str] | None
) -> _Request:
    if not isinstance(args, Mapping):
        raise ToolFailure(f"{op.operation_id}: the arguments must be a JSON object", code="INVALID_ARGUMENT")
    schema = op.arguments_schema()
    missing = [name for name in schema.get("required", []) if args.get(name) is None]
    if missing:
        raise ToolFailure(
            f"{op.operation_id}: missing required argument(s): {', '.join(missing)}", code="INVALID_ARGUMENT"
        )
    path = op.path
    query: list[tuple[str, str]] = []
    sent_headers = {"Accept": "application/json, */*;q=0.5", "User-Agent": "convener"}
    for parameter in op.parameters:
        value = args.get(parameter.name)
        if value is None:
            continue
        if parameter.location == "path":
            path = path.replace(f"{{{parameter.name}}}", urllib.parse.quote(_text(value), safe=""))
        elif parameter.location == "query":
            values = value if isinstance(value, list) else [value]
            query.extend((parameter.name, _text(v)) for v in values if v is not None)
        else:
            sent_headers[parameter.name] = _text(value)
    sent_headers.update(headers or {})
    for header, value in sent_headers.items():
        if "\r" in value or "\n" in value:
            raise ToolFailure(
                f"{op.operation_id}: header {header} must not contain line breaks", code="INVALID_ARGUMENT"
            )
    body: Any = None
    has_body = False
    if op.body_schema is not None:
        if op.body_merged:
            names = {p.name for p in op.parameters}
            known = op.body_schema["properties"]
            open_ended = op.body_schema.get("additionalProperties", True) is not False
            body = {k: v for k, v in args.items() if k not in names and (k in known or open_ended)}
            has_body = bool(body) or op.body_required
        elif BODY_ARGUMENT in args:
            body, has_body = args[BODY_ARGUMENT], True
    # A server URL may carry a query (an API key, say): keep it, and add the query parameters after it.
    server = urllib.parse.urlsplit(op.server_url)
    full_path = server.path.rstrip("/") + path
    url = httpx.URL(urllib.parse.urlunsplit((server.scheme, server.netloc, full_path, server.query, "")))
    if query:
        url = url.copy_merge_params(tuple(query))
    return _Request(url, sent_headers, body, has_body)


def call_operation(
    op: OpenApiOperation,
    args: dict[str, Any],
    *,
    timeout: float,
    headers: dict[str, str] | None = None,
    client: httpx.Client | None = None,
) -> dict[str, Any]:
    """Call ``op`` with the model's ``args`` (shaped by ``arguments_schema``); ``{"output": ...}`` on 2xx.

    ``headers`` (credentials, say) are sent last and win over header parameters. ``client`` lets the runtime
    reuse connections; its own timeout is overridden by ``timeout``, which also bounds reading the response.
    Every failure is a ``ToolFailure``: a missing argument INVALID_ARGUMENT, an error status its google.rpc
    code with an excerpt of the body, a timeout DEADLINE_EXCEEDED, an unreachable server UNAVAILABLE.
    """
    try:
        request = _build_request(op, args, headers)
        if client is None:
            with httpx.Client(follow_redirects=True) as own:
                return _send(own, op, request, timeout)
        return _send(client, op, request, timeout)
    except ToolFailure:
        raise
    except httpx.TimeoutException:
        raise ToolFailure(
            f"{op.operation_id} did not answer within {timeout:g} s", code="DEADLINE_EXCEEDED"
        ) from None
    except httpx.ConnectError as error:
        host = urllib.parse.urlsplit(op.server_url).netloc
        raise ToolFailure(
            f"{op.operation_id}: cannot connect to {host}: {_clip(str(error))}", code="UNAVAILABLE"
        ) from None
    except httpx.HTTPError as error:
        raise ToolFailure(
            f"{op.operation_id}: {type(error).__name__}: {_clip(str(error))}", code="UNAVAILABLE"
        ) from None
    except (httpx.InvalidURL, TypeError, ValueError) as error:  # unencodable arguments or a broken URL
        raise ToolFailure(
            f"{op.operation_id}: cannot send the request: {type(error).__name__}: {_clip(str(error))}",
            code="INVALID_ARGUMENT",
        ) from None
    except Exception as error:  # a bug here must still reach the model as a tool error, not crash the turn
        raise ToolFailure(f"{op.operation_id} failed: {type(error).__name__}", code="INTERNAL") from error


def _send(client: httpx.Client, op: OpenApiOperation, request: _Request, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    with client.stream(
        op.method,
        request.url,
        headers=request.headers,
        json=request.body if request.has_body else None,
        timeout=timeout,
        follow_redirects=True,
    ) as response:
        success = response.is_success
        data = bytearray()
        for chunk in response.iter_bytes():
            data += chunk
            if len(data) > MAX_RESPONSE_BYTES:
                if success:
                    raise ToolFailure(
                        f"{op.operation_id} answered with more than {MAX_RESPONSE_BYTES // 1024} KB",
                        code="RESOURCE_EXHAUSTED",
                    )
                break
            if time.monotonic() > deadline:
                raise httpx.ReadTimeout("the response took too long to read")
        text = bytes(data).decode(response.encoding or "utf-8", errors="replace")
        status, reason = response.status_code, response.reason_phrase
        content_type = response.headers.get("content-type", "").lower()
    if not success:
        excerpt = _clip(" ".join(text.split()), ERROR_EXCERPT)
        message = f"{op.operation_id} returned HTTP {status} {reason}".rstrip()
        message += f": {excerpt}" if excerpt else ""
        raise ToolFailure(message, code=_status_code(status))
    if not data:
        return {"output": None}
    if "json" in content_type or not content_type:
        try:
            return {"output": json.loads(text)}
        except ValueError:
            pass
    return {"output": text}
