"""Seed 003's ``Message`` as a strict JSON Schema: every object admits exactly the seed's fields, so a
message with a misspelt or invented field fails. Written from the seed, not from Convener's models."""

from __future__ import annotations

from typing import Any


def obj(properties: dict[str, Any], *, one_of: tuple[str, ...] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if one_of:  # a proto oneof: at most one of these is set
        schema["not"] = {"anyOf": [{"required": [a, b]} for i, a in enumerate(one_of) for b in one_of[i + 1:]]}
    return schema


STRING = {"type": "string"}
INTEGER = {"type": "integer"}
STRUCT = {"type": "object"}
STRINGS = {"type": "array", "items": STRING}

FIELD: dict[str, Any] = obj({
    "name": STRING, "type": STRING, "description": STRING, "mode": STRING, "synonyms": STRINGS, "tags": STRINGS,
    "displayName": STRING, "subfields": {"type": "array"}, "category": STRING, "valueFormat": STRING})
SCHEMA = obj({"fields": {"type": "array", "items": FIELD}, "description": STRING, "synonyms": STRINGS,
              "tags": STRINGS, "displayName": STRING, "filters": {"type": "array"}})
TABLE_REFERENCE = obj({"projectId": STRING, "datasetId": STRING, "tableId": STRING, "schema": SCHEMA})
DATASOURCE = obj({"schema": SCHEMA, "structSchema": STRUCT, "bigqueryTableReference": TABLE_REFERENCE,
                  "studioDatasourceId": STRING, "lookerExploreReference": STRUCT,
                  "bigqueryPropertyGraphReference": STRUCT},
                 one_of=("bigqueryTableReference", "studioDatasourceId", "lookerExploreReference",
                         "bigqueryPropertyGraphReference"))
EXAMPLE_QUERY = obj({"sqlQuery": STRING, "naturalLanguageQuestion": STRING, "parameters": {"type": "array", "items": obj(
    {"name": STRING, "description": STRING, "dataType": STRING})}})
GLOSSARY_TERM = obj({"displayName": STRING, "description": STRING, "labels": STRINGS})
TEXT_TYPES = ["TEXT_TYPE_UNSPECIFIED", "FINAL_RESPONSE", "THOUGHT", "PROGRESS", "FOLLOWUP_QUESTIONS"]
SYSTEM_KINDS = ("text", "schema", "data", "analysis", "chart", "error", "exampleQueries")

SYSTEM_MESSAGE = obj({
    "citation": obj({
        "sources": {"type": "array", "items": obj({
            "id": STRING, "title": STRING, "uri": STRING, "exampleQuery": EXAMPLE_QUERY,
            "glossaryTerm": GLOSSARY_TERM}, one_of=("uri", "exampleQuery", "glossaryTerm"))},
        "anchors": {"type": "array", "items": obj({"textMessageAnchor": obj({
            "partIndex": INTEGER, "startOffsetBytes": INTEGER, "endOffsetBytes": INTEGER,
            "sourceIds": STRINGS})})}}),
    "text": obj({"parts": STRINGS, "textType": {"enum": TEXT_TYPES}, "thoughtSignature": STRING}),
    "schema": obj({"query": obj({"question": STRING}),
                   "result": obj({"datasources": {"type": "array", "items": DATASOURCE}})}, one_of=("query", "result")),
    "data": obj({
        "query": obj({"question": STRING, "name": STRING, "datasources": {"type": "array", "items": DATASOURCE},
                      "looker": STRUCT}),
        "generatedSql": STRING,
        "result": obj({"name": STRING, "schema": SCHEMA, "data": {"type": "array", "items": STRUCT},
                       "formattedData": {"type": "array", "items": STRUCT}}),
        "bigQueryJob": STRUCT,
        "matchedQuery": obj({"exampleQuery": EXAMPLE_QUERY, "queryParameterValues": {"type": "array", "items": obj(
            {"name": STRING, "value": STRING})}}),
    }, one_of=("query", "generatedSql", "result", "bigQueryJob", "matchedQuery")),
    "analysis": obj({
        "query": obj({"question": STRING, "dataResultNames": STRINGS}),
        "progressEvent": obj({k: STRING for k in (
            "plannerReasoning", "coderInstruction", "code", "executionOutput", "executionError",
            "resultVegaChartJson", "resultNaturalLanguage", "resultCsvData", "resultReferenceData", "error")}),
    }, one_of=("query", "progressEvent")),
    "chart": obj({"query": obj({"instructions": STRING, "dataResultName": STRING}),
                  "result": obj({"vegaConfig": STRUCT, "image": obj({"mimeType": STRING, "data": STRING})})},
                 one_of=("query", "result")),
    "error": obj({"text": STRING}),
    "exampleQueries": obj({"exampleQueries": {"type": "array", "items": EXAMPLE_QUERY}}),
    "groupId": INTEGER,
}, one_of=SYSTEM_KINDS)

MESSAGE = obj({
    "timestamp": STRING, "messageId": STRING,
    "userMessage": obj({"text": STRING}),
    "systemMessage": SYSTEM_MESSAGE,
}, one_of=("userMessage", "systemMessage"))
