"""Data agents: create, read, update (with publishing), delete and list, keyset-paginated.

An agent has a staging context that its authors edit and a published context that conversations use;
publishing copies staging to published and keeps the previous one as ``lastPublishedContext``, as in
Google's DataAgent. Every caller of the service sees every agent (an agent is shared by a team); who may
change one is decided by scopes at the tool layer.
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import Row, delete, insert, select, update

from convener.analytics.models import Context, DataAgent, DataAnalyticsAgent, ListDataAgentsResponse
from convener.analytics.tables import data_agents
from convener.api.errors import AlreadyExists, InvalidArgument, NotFound
from convener.api.paging import PageTokens, resolve_page_size, split_page
from convener.api.protojson import Timestamp
from convener.auth.caller import Caller
from convener.outside.limits import DATA_AGENT_TEXT
from convener.store.database import Database

PARENT = "projects/convener/locations/global"
AGENTS = f"{PARENT}/dataAgents/"
AGENT_ID = re.compile(r"[a-z][a-z0-9-]{0,62}")
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000
MAX_TEXT = DATA_AGENT_TEXT
UPDATABLE = {
    "display_name": "display_name",
    "description": "description",
    "labels": "labels",
    "data_analytics_agent.staging_context": "staging_context",
    "data_analytics_agent.published_context": "published_context",
}


def agent_id_of(text: str) -> str:
    """An agent ID from an ID or a full name, or INVALID_ARGUMENT."""
    agent_id = text.removeprefix(AGENTS) if isinstance(text, str) else ""
    if not AGENT_ID.fullmatch(agent_id):
        raise InvalidArgument(f'data agent "{str(text)[:80]}" must be an ID of 1-63 lowercase letters, digits '
                              f"and hyphens starting with a letter, or a name {AGENTS}{{id}}")
    return agent_id


def _context_json(context: Context | None) -> dict[str, Any] | None:
    return context.to_json() if context is not None else None


def _context(value: Any) -> Context | None:
    return Context.model_validate(value) if value else None


def row_to_agent(row: Row[Any]) -> DataAgent:
    return DataAgent(
        name=AGENTS + row.agent_id,
        display_name=row.display_name or None,
        description=row.description or None,
        labels=row.labels or None,
        create_time=Timestamp.from_micros(row.create_time_us),
        update_time=Timestamp.from_micros(row.update_time_us),
        data_analytics_agent=DataAnalyticsAgent(
            staging_context=_context(row.staging_context),
            published_context=_context(row.published_context),
            last_published_context=_context(row.last_published_context),
        ),
    )


def _check_text(agent: DataAgent) -> None:
    for what, text in (("displayName", agent.display_name), ("description", agent.description)):
        if text is not None and len(text) > MAX_TEXT:
            raise InvalidArgument(f"{what} is longer than {MAX_TEXT} characters")


class DataAgents:
    def __init__(self, database: Database, tokens: PageTokens) -> None:
        self.database = database
        self.tokens = tokens

    def create(self, agent_id: str, agent: DataAgent, caller: Caller) -> DataAgent:
        agent_id = agent_id_of(agent_id)
        _check_text(agent)
        body = agent.data_analytics_agent or DataAnalyticsAgent()
        now = Timestamp.now().to_micros()
        with self.database.transaction() as connection:
            if connection.execute(select(data_agents.c.agent_id).where(data_agents.c.agent_id == agent_id)).first():
                raise AlreadyExists(f"data agent {AGENTS}{agent_id} already exists")
            connection.execute(insert(data_agents).values(
                agent_id=agent_id, display_name=agent.display_name or "", description=agent.description or "",
                labels=agent.labels or None, staging_context=_context_json(body.staging_context),
                published_context=_context_json(body.published_context), last_published_context=None,
                creator=caller.principal, create_time_us=now, update_time_us=now,
            ))
            return row_to_agent(connection.execute(select(data_agents).where(data_agents.c.agent_id == agent_id)).one())

    def get(self, agent_id: str) -> DataAgent:
        return row_to_agent(self._row(agent_id_of(agent_id)))

    def _row(self, agent_id: str) -> Row[Any]:
        with self.database.reading() as connection:
            row = connection.execute(select(data_agents).where(data_agents.c.agent_id == agent_id)).first()
        if row is None:
            raise NotFound(f"data agent {AGENTS}{agent_id} does not exist")
        return row

    def update(self, agent_id: str, agent: DataAgent, update_mask: str | None, publish: bool) -> DataAgent:
        agent_id = agent_id_of(agent_id)
        _check_text(agent)
        mask = [path.strip() for path in (update_mask or "").split(",") if path.strip()]
        if not mask:
            mask = [path for path in UPDATABLE if _given(agent, path)]
        unknown = [path for path in mask if path not in UPDATABLE]
        if unknown:
            raise InvalidArgument(f"update_mask: cannot update {', '.join(unknown)}; updatable fields: "
                                  f"{', '.join(UPDATABLE)}")
        body = agent.data_analytics_agent or DataAnalyticsAgent()
        incoming: dict[str, Any] = {
            "display_name": agent.display_name or "", "description": agent.description or "",
            "labels": agent.labels or None, "staging_context": _context_json(body.staging_context),
            "published_context": _context_json(body.published_context),
        }
        with self.database.transaction() as connection:
            row = connection.execute(select(data_agents).where(data_agents.c.agent_id == agent_id)).first()
            if row is None:
                raise NotFound(f"data agent {AGENTS}{agent_id} does not exist")
            values = {UPDATABLE[path]: incoming[UPDATABLE[path]] for path in mask}
            if publish:
                staging = values.get("staging_context", row.staging_context)
                if not staging:
                    raise InvalidArgument(f"data agent {AGENTS}{agent_id} has no staging context to publish")
                values["last_published_context"] = row.published_context
                values["published_context"] = staging
            values["update_time_us"] = max(Timestamp.now().to_micros(), row.update_time_us + 1)
            connection.execute(update(data_agents).where(data_agents.c.agent_id == agent_id).values(**values))
            return row_to_agent(connection.execute(select(data_agents).where(data_agents.c.agent_id == agent_id)).one())

    def delete(self, agent_id: str) -> str:
        agent_id = agent_id_of(agent_id)
        with self.database.transaction() as connection:
            if connection.execute(delete(data_agents).where(data_agents.c.agent_id == agent_id)).rowcount == 0:
                raise NotFound(f"data agent {AGENTS}{agent_id} does not exist")
        return AGENTS + agent_id

    def list(self, page_size: int | None, page_token: str | None, caller: Caller) -> ListDataAgentsResponse:
        size = resolve_page_size(page_size, default=DEFAULT_PAGE_SIZE, maximum=MAX_PAGE_SIZE)
        query = {"tool": "list_accessible_data_agents"}
        statement = select(data_agents)
        if page_token:
            match self.tokens.position(page_token, query=query, caller=caller.principal):
                case [str() as after]:
                    statement = statement.where(data_agents.c.agent_id > after)
                case _:
                    raise InvalidArgument("pageToken is not valid for this request; start again without a pageToken")
        with self.database.reading() as connection:
            rows = connection.execute(statement.order_by(data_agents.c.agent_id).limit(size + 1)).all()
        page, more = split_page(rows, size)
        token = self.tokens.issue(query=query, caller=caller.principal, position=[page[-1].agent_id]) if more else None
        return ListDataAgentsResponse(data_agents=[row_to_agent(row) for row in page], next_page_token=token)


def _given(agent: DataAgent, path: str) -> bool:
    """Whether the request set the field at ``path`` (for an update without a mask)."""
    if path.startswith("data_analytics_agent."):
        body = agent.data_analytics_agent
        return body is not None and getattr(body, path.split(".", 1)[1]) is not None
    return getattr(agent, path) is not None
