"""The analytics service: SQL sources, data agents, and the questions asked of them.

A question is answered over tables named by reference (``{datasetId: source, tableId: table}``), either
inline (``ask_data_insights``) or from a data agent's context (``ask_data_agent``, which also keeps the
conversation so that a follow-up can build on the questions before it).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path

from pydantic import ValidationError

from convener.analytics.agents import DataAgents, agent_id_of
from convener.analytics.budget import DEFAULT_BUDGET, Budget
from convener.analytics.conversations import CONVERSATIONS, Conversations
from convener.analytics.engines import DataEngine
from convener.analytics.models import (
    BigQueryTableReferences,
    Context,
    DataAgent,
    DatasourceReferences,
    Message,
    TableReference,
)
from convener.analytics.pipeline import Emit, Pipeline, Table
from convener.analytics.shapes import TableInfo
from convener.analytics.sources import SqlSources
from convener.analytics.spill import SpillFolder
from convener.api.errors import FailedPrecondition, InvalidArgument, NotFound
from convener.api.paging import PageTokens
from convener.auth.caller import Caller
from convener.llm.base import ModelProvider
from convener.outside.gate import Gate
from convener.store.database import Database

MAX_TABLES = 20
HISTORY_MESSAGES = 40


@dataclass(frozen=True)
class Asked:
    messages: list[Message]
    conversation: str | None = None


class AnalyticsService:
    def __init__(self, database: Database, tokens: PageTokens, provider: Callable[[], ModelProvider | None], *,
                 gate: Gate, row_limit: int = 1000, timeout_seconds: float = 30.0,
                 budget: Budget = DEFAULT_BUDGET, data_dir: Path | None = None) -> None:
        """``data_dir``: where DuckDB sources may spill (a folder of this process's, removed on close);
        None: they never spill to disk."""
        self._spill = SpillFolder(data_dir) if data_dir is not None else None
        if self._spill is not None:
            budget = replace(budget, spill=self._spill)
        self.sources = SqlSources(database, gate, budget)
        self.agents = DataAgents(database, tokens)
        self.conversations = Conversations(database, tokens)
        self.pipeline = Pipeline(provider, row_limit, timeout_seconds)

    def ask_inline(self, question: str, references: str | list[TableReference], caller: Caller,
                   emit: Emit | None = None) -> Asked:
        refs = parse_references(references)
        with ExitStack() as stack:
            tables = self._tables(refs, caller, stack)
            return Asked(self.pipeline.run(question, tables, Context(), (), emit))

    def ask_agent(self, agent: str, question: str, conversation: str | None, staging: bool, caller: Caller,
                  emit: Emit | None = None) -> Asked:
        agent_id = agent_id_of(agent)
        if conversation:
            conversation_id, owner_agent = self.conversations.owned(conversation, caller)
            if owner_agent != agent_id:
                raise InvalidArgument(f"conversation {CONVERSATIONS}{conversation_id} is with data agent "
                                      f"{owner_agent}, not {agent_id}")
            history = self.conversations.history(conversation_id, HISTORY_MESSAGES)
        else:
            conversation_id, history = "", []
        context = _context_of(self.agents.get(agent_id), staging)
        refs = context.datasource_references.bq.table_references if (
            context.datasource_references and context.datasource_references.bq) else []
        with ExitStack() as stack:
            tables = self._tables(refs, caller, stack)
            messages = self.pipeline.run(question, tables, context, history, emit)
        if not conversation_id:
            conversation_id = self.conversations.start(agent_id, caller)
        self.conversations.append(conversation_id, messages)
        return Asked(messages, CONVERSATIONS + conversation_id)

    def _tables(self, refs: Sequence[TableReference], caller: Caller, stack: ExitStack) -> list[Table]:
        if not refs:
            raise InvalidArgument("no tables to answer from: give at least one table reference")
        if len(refs) > MAX_TABLES:
            raise InvalidArgument(f"{len(refs)} table references; at most {MAX_TABLES}")
        named: dict[str, list[str]] = {}
        for ref in refs:
            named.setdefault(ref.dataset_id, []).append(ref.table_id)
        engines: dict[str, DataEngine] = {}
        schemas: dict[str, dict[str, TableInfo]] = {}
        tables = []
        for ref in refs:
            source = ref.dataset_id
            if source not in engines:  # one engine and one schema read per source, whatever its tables
                engines[source] = stack.enter_context(self.sources.engine(source, caller, only=named[source]))
                schemas[source] = {t.name.lower(): t for t in reversed(self.sources.schema(source, engines[source]))}
            info = schemas[source].get(ref.table_id.lower())
            if info is None:
                raise NotFound(f'table "{ref.table_id[:100]}" does not exist in SQL source "{source}"')
            tables.append(Table(source, info, engines[source]))
        return tables

    def close(self) -> None:
        self.sources.close()
        if self._spill is not None:
            self._spill.close()


def _context_of(agent: DataAgent, staging: bool) -> Context:
    body = agent.data_analytics_agent
    context = (body.staging_context if staging else body.published_context) if body else None
    if context is None:
        which = "staging" if staging else "published"
        raise FailedPrecondition(f"data agent {agent.name} has no {which} context; "
                                 + ("set dataAnalyticsAgent.stagingContext" if staging else
                                    "publish it with update_data_agent(publish: true)"))
    return context


def parse_references(references: str | list[TableReference]) -> list[TableReference]:
    """Table references as the Toolbox sends them: a JSON string of objects, or already a list."""
    if isinstance(references, list):
        return references
    try:
        parsed = json.loads(references)
    except (json.JSONDecodeError, RecursionError):
        raise InvalidArgument('table_references is not JSON; expected e.g. [{"datasetId": "demo", '
                              '"tableId": "cars"}]') from None
    if isinstance(parsed, dict):
        parsed = [parsed]
    if not isinstance(parsed, list):
        raise InvalidArgument("table_references must be a JSON array of table references")
    try:
        return [TableReference.model_validate(item) for item in parsed]
    except ValidationError as invalid:
        first = invalid.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InvalidArgument(f"table_references: {where}: {first['msg']}") from None


def references(tables: Mapping[str, Sequence[str]]) -> DatasourceReferences:
    """Datasource references to the given tables of each source."""
    return DatasourceReferences(bq=BigQueryTableReferences(table_references=[
        TableReference(dataset_id=source, table_id=table) for source, names in tables.items() for table in names]))
