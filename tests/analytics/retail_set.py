"""The retail tuning set (``retail/``) run through the real offline pipeline: a data agent over two CSV files
with a two-term glossary (one term a formula) and one relationship, asked questions of kinds the demo gold set
lacks. Shared by ``test_retail.py`` and ``benchmarks/analytics_retail.py``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from convener.analytics.engines import DataEngine, open_engine
from convener.analytics.models import (
    ChartImageOptions,
    ChartOptions,
    ConversationOptions,
    Context,
    GlossaryTerm,
    Message,
    SchemaPaths,
    SchemaRelationship,
    TextType,
)
from convener.analytics.pipeline import Pipeline, Table
from tests.analytics.test_gold import ordered, run, same_result

FOLDER = Path(__file__).with_name("retail")
SET = FOLDER / "retail.json"


def document() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(SET.read_text("utf-8"))
    return loaded


def context(doc: dict[str, Any]) -> Context:
    terms = [GlossaryTerm(display_name=t["displayName"], description=t.get("description"),
                          labels=t.get("labels")) for t in doc["glossary"]]
    relationships = [SchemaRelationship(left_schema_paths=SchemaPaths(table_fqn=f"retail.{r['left'][0]}",
                                                                      paths=r["left"][1]),
                                        right_schema_paths=SchemaPaths(table_fqn=f"retail.{r['right'][0]}",
                                                                       paths=r["right"][1]))
                     for r in doc["relationships"]]
    options = ConversationOptions(chart=ChartOptions(image=ChartImageOptions(no_image={})))
    return Context(glossary_terms=terms, schema_relationships=relationships, options=options)


def reference_connection() -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect()
    for name in ("orders", "stores"):
        path = str(FOLDER / f"{name}.csv").replace("'", "''")
        connection.execute(f"CREATE TABLE {name} AS SELECT * FROM read_csv('{path}')")
    return connection


@dataclass
class Outcome:
    item: dict[str, Any]
    sql: str | None
    final: str
    right: bool
    detail: str = ""


def final_text(messages: Sequence[Message]) -> str:
    texts = [m.system_message.text for m in messages if m.system_message and m.system_message.text
             and m.system_message.text.text_type == TextType.FINAL_RESPONSE]
    return "\n".join(part for text in texts for part in text.parts)


def generated(messages: Sequence[Message]) -> str | None:
    sqls = [m.system_message.data.generated_sql for m in messages
            if m.system_message and m.system_message.data and m.system_message.data.generated_sql]
    ran = [m for m in messages if m.system_message and m.system_message.data and m.system_message.data.result]
    return sqls[-1] if sqls and ran else None


class Retail:
    def __init__(self) -> None:
        self.doc = document()
        self.engine: DataEngine = open_engine(str(FOLDER))
        self.tables = [Table("retail", info, self.engine) for info in self.engine.tables()]
        self.context = context(self.doc)
        self.pipeline = Pipeline(lambda: None)
        self.reference = reference_connection()

    def ask(self, question: str) -> list[Message]:
        return self.pipeline.run(question, self.tables, self.context)

    def judge(self, item: dict[str, Any]) -> Outcome:
        messages = self.ask(item["question"])
        sql, final = generated(messages), final_text(messages)
        if item.get("expect") == "could_not_use":
            flagged = sql is None or f"could not use '{item['word']}'" in final.lower()
            return Outcome(item, sql, final, flagged)
        if sql is None:
            return Outcome(item, sql, final, False, "no answer")
        if "could not use" in final.lower():
            return Outcome(item, sql, final, False, "flagged a word as not used")
        reference = run(self.reference, item["sql"])
        try:
            answer = run(self.reference, sql)
        except duckdb.Error as failure:
            return Outcome(item, sql, final, False, f"fails: {failure}")
        right = same_result(reference, answer, ordered(item["sql"]), item.get("order_key", -1))
        return Outcome(item, sql, final, right)

    def close(self) -> None:
        self.reference.close()
        self.engine.close()
