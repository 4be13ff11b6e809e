"""OpenAPI tools against a real HTTP API served by uvicorn in a thread."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest
import yaml
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from convener.api.errors import InvalidArgument
from convener.ces.runtime.failures import ToolFailure
from convener.ces.runtime.openapi import OpenApiOperation, call_operation, parse_operation
from tests.conftest import free_port, serving_asgi

FIELD = "tool.openApiTool.openApiSchema"
STRING = {"type": "string"}
STRINGS = {"type": "array", "items": {"type": "string"}}


def pets_document(server_url: str | None = "/api") -> dict[str, Any]:
    """A small API description with path-level parameters, $refs, a JSON body and a non-object body."""
    document: dict[str, Any] = {
        "openapi": "3.0.3",
        "info": {"title": "Pets", "version": "1.0"},
        "paths": {
            "/pets/{petId}": {
                "parameters": [{"$ref": "#/components/parameters/PetId"}],
                "get": {
                    "operationId": "getPet",
                    "summary": "Gets one pet.",
                    "parameters": [
                        {"name": "verbose", "in": "query", "schema": {"type": "boolean"}},
                        {"name": "tag", "in": "query", "schema": STRINGS},
                        {"name": "X-Trace", "in": "header", "description": "A trace id.", "schema": STRING},
                    ],
                    "responses": {"200": {"description": "the pet"}},
                },
            },
            "/pets": {
                "post": {
                    "operationId": "createPet",
                    "description": "Creates a pet.",
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/NewPet"}}},
                    },
                    "responses": {"201": {"description": "created"}},
                },
            },
            "/tags": {
                "put": {
                    "operationId": "setTags",
                    "requestBody": {
                        "content": {"application/json": {"schema": STRINGS}},
                    },
                    "responses": {"200": {"description": "the tags"}},
                },
            },
            "/broken": {"get": {"operationId": "broken", "responses": {}}},
            "/slow": {"get": {"operationId": "slow", "responses": {}}},
            "/big": {"get": {"operationId": "big", "responses": {}}},
            "/text": {"get": {"operationId": "text", "responses": {}}},
        },
        "components": {
            "parameters": {
                "PetId": {"name": "petId", "in": "path", "required": True, "schema": {"type": "string"}},
            },
            "schemas": {
                "NewPet": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {
                        "name": {"type": "string"},
                        "owner": {"$ref": "#/components/schemas/Owner"},
                        "family": {"$ref": "#/components/schemas/Tree"},
                    },
                },
                "Owner": {"type": "object", "properties": {"email": {"type": "string"}}},
                "Tree": {
                    "type": "object",
                    "properties": {
                        "children": {"type": "array", "items": {"$ref": "#/components/schemas/Tree"}},
                    },
                },
            },
        },
    }
    if server_url is not None:
        document["servers"] = [{"url": server_url}]
    return document


async def get_pet(request: Request) -> Response:
    pet_id = request.path_params["pet_id"]
    if pet_id == "missing":
        return JSONResponse({"error": "no pet is called missing"}, status_code=404)
    return JSONResponse({
        "rawPath": request.scope["raw_path"].decode(),
        "query": sorted(request.query_params.multi_items()),
        "trace": request.headers.get("x-trace"),
        "auth": request.headers.get("authorization"),
    })


async def create_pet(request: Request) -> Response:
    return JSONResponse({"created": await request.json()}, status_code=201)


async def set_tags(request: Request) -> Response:
    return JSONResponse({"tags": await request.json()})


async def broken(request: Request) -> Response:
    return PlainTextResponse("the database is on fire\n" * 100, status_code=500)


async def slow(request: Request) -> Response:
    await anyio.sleep(1.0)
    return JSONResponse({"finally": True})


async def big(request: Request) -> Response:
    return PlainTextResponse("x" * (1024 * 1024 + 10))


async def text(request: Request) -> Response:
    return PlainTextResponse("just text")


async def document_json(request: Request) -> Response:
    return JSONResponse(pets_document())


async def document_yaml(request: Request) -> Response:
    return PlainTextResponse(yaml.safe_dump(pets_document()), media_type="application/yaml")


API = Starlette(routes=[
    Route("/openapi.json", document_json),
    Route("/specs/openapi.yaml", document_yaml),
    Route("/api/pets/{pet_id:path}", get_pet),
    Route("/api/pets", create_pet, methods=["POST"]),
    Route("/api/tags", set_tags, methods=["PUT"]),
    Route("/api/broken", broken),
    Route("/api/slow", slow),
    Route("/api/big", big),
    Route("/api/text", text),
])


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with serving_asgi(API) as url:
        yield url


def operation(name: str | None, base_url: str, document: dict[str, Any] | None = None) -> OpenApiOperation:
    text = json.dumps(document if document is not None else pets_document())
    return parse_operation(text, name=name, url=f"{base_url}/api", field=FIELD)


def invalid(schema_text: str, name: str | None = None, url: str | None = "http://127.0.0.1:1/api") -> str:
    with pytest.raises(InvalidArgument) as refused:
        parse_operation(schema_text, name=name, url=url, field=FIELD)
    assert refused.value.message.startswith(FIELD), refused.value.message
    return refused.value.message


def failure(op: OpenApiOperation, args: dict[str, Any], timeout: float = 5) -> ToolFailure:
    with pytest.raises(ToolFailure) as failed:
        call_operation(op, args, timeout=timeout)
    assert "Traceback" not in failed.value.message
    return failed.value


# ---------------------------------------------------------------- definitions


def test_json_text_with_path_query_and_header_parameters(base_url: str) -> None:
    op = operation("getPet", base_url)

    assert (op.operation_id, op.method, op.path) == ("getPet", "GET", "/pets/{petId}")
    assert op.description == "Gets one pet."
    assert op.arguments_schema() == {
        "type": "object",
        "properties": {
            "petId": {"type": "string"},
            "verbose": {"type": "boolean"},
            "tag": {"type": "array", "items": {"type": "string"}},
            "X-Trace": {"type": "string", "description": "A trace id."},
        },
        "required": ["petId"],
    }
    result = call_operation(
        op, {"petId": "rex the/2nd", "verbose": True, "tag": ["a", "b"], "X-Trace": "t-1"}, timeout=5,
        headers={"Authorization": "Bearer token"},
    )
    assert result == {"output": {
        "rawPath": "/api/pets/rex%20the%2F2nd",
        "query": [["tag", "a"], ["tag", "b"], ["verbose", "true"]],
        "trace": "t-1",
        "auth": "Bearer token",
    }}


def test_yaml_text_is_accepted(base_url: str) -> None:
    text = "# the pets API\n" + yaml.safe_dump(pets_document(server_url=f"{base_url}/api"))

    op = parse_operation(text, name="getPet", url=None, field=FIELD)

    assert op.server_url == f"{base_url}/api"
    assert call_operation(op, {"petId": "7"}, timeout=5)["output"]["rawPath"] == "/api/pets/7"


def test_a_query_in_the_server_url_is_kept(base_url: str) -> None:
    text = json.dumps(pets_document())
    op = parse_operation(text, name="getPet", url=f"{base_url}/api/?key=k1", field=FIELD)

    result = call_operation(op, {"petId": "9", "verbose": False}, timeout=5)

    assert result["output"]["rawPath"] == "/api/pets/9"
    assert result["output"]["query"] == [["key", "k1"], ["verbose", "false"]]


def test_a_url_is_fetched_and_relative_servers_resolved_against_it(base_url: str) -> None:
    op = parse_operation(f"{base_url}/openapi.json", name="createPet", url=None, field=FIELD)

    assert op.server_url == f"{base_url}/api"
    schema = op.arguments_schema()
    assert schema["required"] == ["name"]
    assert schema["properties"]["owner"] == {"type": "object", "properties": {"email": {"type": "string"}}}
    assert "$ref" not in json.dumps(schema), "local references are inlined"
    pet = {"name": "Rex", "owner": {"email": "a@example.com"}, "unlisted": 1}
    assert call_operation(op, pet, timeout=5) == {"output": {"created": pet}}

    from_yaml = parse_operation(f"{base_url}/specs/openapi.yaml", name="getPet", url=None, field=FIELD)
    assert from_yaml.server_url == f"{base_url}/api"


def test_an_unreachable_or_missing_url_is_invalid(base_url: str) -> None:
    refused = invalid(f"http://127.0.0.1:{free_port()}/openapi.json", url=None)
    assert "cannot fetch" in refused

    assert "HTTP 404" in invalid(f"{base_url}/nothing-here.json", url=None)
    assert "HTTP 404" not in invalid(f"{base_url}/api/text", url=None)  # fetched, but not an OpenAPI document


def test_a_recursive_schema_is_cut_where_it_repeats(base_url: str) -> None:
    family = operation("createPet", base_url).arguments_schema()["properties"]["family"]

    children = family["properties"]["children"]
    assert children["type"] == "array"
    assert "recursive" in children["items"]["description"]


def test_a_body_that_is_not_an_object_is_the_body_argument(base_url: str) -> None:
    op = operation("setTags", base_url)

    schema = op.arguments_schema()
    assert schema["properties"]["body"]["items"] == {"type": "string"}
    assert "required" not in schema
    assert call_operation(op, {"body": ["x", "y"]}, timeout=5) == {"output": {"tags": ["x", "y"]}}


def test_the_only_operation_needs_no_name(base_url: str) -> None:
    document = pets_document()
    document["paths"] = {"/text": document["paths"]["/text"]}

    op = operation(None, base_url, document)

    assert op.operation_id == "text"
    assert call_operation(op, {}, timeout=5) == {"output": "just text"}


def test_operation_selection_errors() -> None:
    text = json.dumps(pets_document())

    several = invalid(text, name=None)
    assert "set name" in several and "getPet" in several and "createPet" in several
    unknown = invalid(text, name="deletePet")
    assert '"deletePet"' in unknown and "getPet" in unknown

    document = pets_document()
    document["paths"]["/text"]["get"]["operationId"] = "getPet"
    assert "must be unique" in invalid(json.dumps(document), name="getPet")


def test_stored_form_round_trips_through_json(base_url: str) -> None:
    op = operation("createPet", base_url)

    stored = json.loads(json.dumps(op.to_json()))
    assert OpenApiOperation.from_json(stored) == op

    with pytest.raises(ToolFailure) as damaged:
        OpenApiOperation.from_json({"operationId": "x"})
    assert damaged.value.code == "INTERNAL"


def test_parsing_a_text_document_again_is_cached() -> None:
    text = json.dumps(pets_document("http://127.0.0.1:1"))

    first = parse_operation(text, name="getPet", url=None, field=FIELD)

    assert parse_operation(text, name="getPet", url=None, field=FIELD) is first


def _with(change: Any) -> str:
    document = copy.deepcopy(pets_document())
    change(document)
    return json.dumps(document)


def _exponential(document: dict[str, Any]) -> None:
    """Twenty levels of schemas, each referring twice to the next: a million nodes once inlined."""
    schemas = document["components"]["schemas"]
    for level in range(20):
        child = {"$ref": f"#/components/schemas/L{level + 1}"}
        schemas[f"L{level}"] = {"type": "object", "properties": {"left": child, "right": child}}
    schemas["L20"] = {"type": "string"}
    schemas["Owner"] = {"$ref": "#/components/schemas/L0"}


@pytest.mark.parametrize(
    ("text", "name", "problem"),
    [
        ("{not json: [", None, "not valid YAML"),
        ("- just\n- a list\n", None, "not an OpenAPI document"),
        ('{"swagger": "2.0", "paths": {}}', None, "Swagger 2.0"),
        ('{"openapi": "4.0.0", "paths": {"/a": {"get": {}}}}', None, "3.x"),
        ('{"openapi": "3.1.0"}', None, 'no "paths"'),
        ("file:///etc/passwd", None, "http:// and https://"),
        (_with(lambda d: d["components"]["schemas"].update(Owner={"$ref": "https://example.com/owner.json"})),
         "createPet", "not local"),
        (_with(lambda d: d["components"]["schemas"].pop("Owner")), "createPet", "points at nothing"),
        (_with(lambda d: d["paths"]["/pets/{petId}"]["get"]["parameters"].append(
            {"name": "session", "in": "cookie"})), "getPet", "only path, query and header"),
        (_with(lambda d: d["paths"]["/pets/{petId}"].pop("parameters")), "getPet",
         'no path parameter "petId"'),
        (_with(lambda d: d["paths"]["/pets"]["post"]["requestBody"].update(
            content={"multipart/form-data": {"schema": {}}})), "createPet", "must be application/json"),
        (_with(_exponential), "createPet", "more than 50000 nodes"),
    ],
)
def test_malformed_documents_are_invalid(text: str, name: str | None, problem: str) -> None:
    assert problem in invalid(text, name=name)


def test_a_yaml_alias_loop_is_invalid() -> None:
    text = (
        "openapi: 3.0.0\n"
        "paths:\n"
        "  /a:\n"
        "    post:\n"
        "      requestBody:\n"
        "        content:\n"
        "          application/json:\n"
        "            schema: &loop {type: object, properties: {self: *loop}}\n"
    )
    assert "recursive alias" in invalid(text), "refused by the YAML reader, before any walk"


def test_a_server_is_required() -> None:
    text = json.dumps(pets_document(server_url=None))
    assert "servers" in invalid(text, name="getPet", url=None)

    relative = json.dumps(pets_document(server_url="/api"))
    assert "not an absolute http(s) URL" in invalid(relative, name="getPet", url=None)
    overridden = parse_operation(relative, name="getPet", url="https://pets.example.com/v1", field=FIELD)
    assert overridden.server_url == "https://pets.example.com/v1"


def test_an_oversized_document_is_invalid() -> None:
    assert "MB" in invalid("#" * (2 * 1024 * 1024 + 1))


# ---------------------------------------------------------------- calls


def test_a_missing_required_argument_is_invalid(base_url: str) -> None:
    failed = failure(operation("createPet", base_url), {"owner": {}})
    assert failed.code == "INVALID_ARGUMENT"
    assert "name" in failed.message


def test_error_statuses_carry_their_code_and_an_excerpt(base_url: str) -> None:
    not_found = failure(operation("getPet", base_url), {"petId": "missing"})
    assert not_found.code == "NOT_FOUND"
    assert "HTTP 404" in not_found.message and "no pet is called missing" in not_found.message

    broken = failure(operation("broken", base_url), {})
    assert broken.code == "UNAVAILABLE"
    assert "HTTP 500" in broken.message and "the database is on fire" in broken.message
    assert len(broken.message) < 400


def test_a_slow_api_runs_out_of_time(base_url: str) -> None:
    failed = failure(operation("slow", base_url), {}, timeout=0.3)
    assert failed.code == "DEADLINE_EXCEEDED"
    assert "0.3 s" in failed.message


def test_a_refused_connection_is_unavailable() -> None:
    nowhere = f"http://127.0.0.1:{free_port()}"
    op = parse_operation(json.dumps(pets_document()), name="text", url=nowhere, field=FIELD)

    failed = failure(op, {})
    assert failed.code == "UNAVAILABLE"
    assert "cannot connect" in failed.message


def test_an_oversized_response_is_refused(base_url: str) -> None:
    assert failure(operation("big", base_url), {}).code == "RESOURCE_EXHAUSTED"


def test_a_shared_client_is_used(base_url: str) -> None:
    with httpx.Client() as client:
        result = call_operation(operation("getPet", base_url), {"petId": "1"}, timeout=5, client=client)
    assert result["output"]["rawPath"] == "/api/pets/1"
