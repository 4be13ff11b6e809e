"""The services of one Convener installation, built from Settings and handed to every adapter.

Each service is built on first use, not when the store opens: a command imports and builds only the services
it uses (``convener jobs`` needs the store and the job queue, not the analytics engine or the knowledge
index), and ``convener serve`` builds every enabled service as it assembles its tools.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from convener.built_once import BuiltOnce
from convener.config import Settings
from convener.jobs.model import ClaimedJob
from convener.jobs.queue import Jobs

if TYPE_CHECKING:
    from convener.analytics.service import AnalyticsService
    from convener.api.paging import PageTokens
    from convener.ces.apps import AppService
    from convener.ces.changelogs import ChangelogService
    from convener.ces.conversations import ConversationService
    from convener.ces.runtime_services import Runtime
    from convener.chat.service import ChatService
    from convener.jobs.engine import Engine
    from convener.jobs.model import Attempt
    from convener.knowledge.operations import Ingests
    from convener.knowledge.service import KnowledgeService
    from convener.llm.base import ModelProvider
    from convener.longrunning.service import OperationService
    from convener.outside.gate import Gate
    from convener.store.database import Database
    from convener.tooling import ToolRegistry

Built = TypeVar("Built")


class ServiceJobs(Jobs):
    """The job queue of a Services whose services are built on demand: the services that define tasks
    register them when they are built, so before a worker runs a job whose task is not yet known, or tells
    which queues there are, ``enlist`` builds every service that defines tasks."""

    def __init__(self, engine: Engine, cancelled: Callable[[str], bool], enlist: Callable[[], None], *,
                 concurrency: int, run_here: bool) -> None:
        super().__init__(engine, cancelled, concurrency=concurrency, run_here=run_here)
        self._enlist = enlist
        self._enlisted = False

    def _enlist_once(self) -> bool:
        """Build the task-defining services unless done already; whether this call did it."""
        if self._enlisted:
            return False
        self._enlist()
        self._enlisted = True
        return True

    @property
    def queues(self) -> frozenset[str]:
        self._enlist_once()
        return super().queues

    def execute(self, claimed: ClaimedJob, attempt: Attempt) -> None:
        if claimed.job.task not in self._tasks:  # a task of a service not built yet: build them, then run it
            self._enlist_once()
        super().execute(claimed, attempt)


@dataclass
class Services:
    settings: Settings
    database: Database
    tokens: PageTokens
    # Building a service builds those it needs (the runtime needs the job queue).
    _built: BuiltOnce = field(init=False, default_factory=BuiltOnce)
    _provider: ModelProvider | None = field(init=False, default=None)
    _provider_lock: threading.Lock = field(init=False, default_factory=threading.Lock)

    def _once(self, name: str, build: Callable[[], Built]) -> Built:
        """The service ``name``, built by ``build`` on first use."""
        return self._built.get(name, build)

    @property
    def apps(self) -> AppService:
        from convener.ces.apps import AppService
        from convener.ces.changelogs import ChangeRecorder

        return self._once("apps", lambda: AppService(self.database, self.tokens,
                                                      ChangeRecorder(self.settings.changelog_retention_days)))

    @property
    def changelogs(self) -> ChangelogService:
        from convener.ces.changelogs import ChangelogService

        return self._once("changelogs", lambda: ChangelogService(
            self.database, self.tokens, self.settings.changelog_retention_days))

    @property
    def conversations(self) -> ConversationService:
        from convener.ces.conversations import ConversationService

        return self._once(
            "conversations",
            lambda: ConversationService(self.database, self.tokens, self.apps, self.settings.list_scan_rows),
        )

    @property
    def gate(self) -> Gate:
        """The one place that decides what callers may reach outside the store."""
        from convener.outside.gate import Gate

        return self._once("gate", lambda: Gate.of(self.settings))

    @property
    def operations(self) -> OperationService:
        from convener.longrunning.service import OperationService

        return self._once("operations", lambda: OperationService(self.database, self.tokens))

    @property
    def jobs(self) -> Jobs:
        """Work that outlives a request; this process runs it too unless ``settings.worker`` is off."""
        return self._once("jobs", lambda: ServiceJobs(
            open_engine(self.settings, self.database), self.operations.is_cancelled, self._enlist_tasks,
            concurrency=self.settings.worker_concurrency, run_here=self.settings.worker))

    def _enlist_tasks(self) -> None:
        """Build the services that define tasks, so that this process's workers know every task."""
        self.runtime.enlist_tasks()
        self.ingests  # noqa: B018

    @property
    def runtime(self) -> Runtime:
        from convener.ces.runtime_services import Runtime

        return self._once("runtime", lambda: Runtime(
            self.database, self.tokens, self.settings, self.apps, self.conversations, self.provider,
            self.operations, self.jobs, self.gate))

    @property
    def chat(self) -> ChatService:
        from convener.chat.service import ChatService

        return self._once("chat", lambda: ChatService(self.database, self.tokens))

    @property
    def knowledge(self) -> KnowledgeService:
        def build() -> KnowledgeService:
            from convener.knowledge.embeddings import default_embedder
            from convener.knowledge.service import KnowledgeService

            return KnowledgeService(self.database, self.tokens, default_embedder(self.settings.knowledge_embeddings),
                                    self.provider, gate=self.gate)

        return self._once("knowledge", build)

    @property
    def ingests(self) -> Ingests:
        from convener.knowledge.operations import Ingests

        return self._once("ingests", lambda: Ingests(self.knowledge, self.operations, self.jobs))

    @property
    def analytics(self) -> AnalyticsService:
        def build() -> AnalyticsService:
            from convener.analytics.budget import analytics_budget
            from convener.analytics.service import AnalyticsService

            return AnalyticsService(self.database, self.tokens, self.provider, gate=self.gate,
                                    row_limit=self.settings.analytics_row_limit,
                                    timeout_seconds=self.settings.analytics_timeout_seconds,
                                    budget=analytics_budget(self.settings), data_dir=self.settings.data_dir)

        return self._once("analytics", build)

    def provider(self) -> ModelProvider | None:
        """The configured model provider, made on first use (most sessions run no llm agent)."""
        if self.settings.llm_provider == "none":
            return None
        with self._provider_lock:
            if self._provider is None:
                from convener.llm.providers import provider_from_settings

                self._provider = provider_from_settings(self.settings)
            return self._provider

    @classmethod
    def open(cls, settings: Settings) -> Services:
        """Connect to the store and bring its schema up to date; the services are built as they are used."""
        from convener.api.paging import PageTokens
        from convener.store.database import Database

        database = Database(settings.resolved_database_url)
        database.migrate()
        services = cls(settings, database, PageTokens(database.installation_secret()))
        if settings.jobs == "procrastinate":
            # Its engine checks the store can carry it (PostgreSQL): a wrong setting fails every command at once,
            # as a usage error, not just those that queue work. The default engine needs no such check.
            services.jobs  # noqa: B018
        return services

    def registries(self) -> dict[str, ToolRegistry]:
        """Tool registries of the enabled services, by service name."""

        def ces() -> ToolRegistry:
            from convener.ces.tools import ces_tools

            return ces_tools(self.apps, self.conversations, self.runtime, self.changelogs)

        def chat() -> ToolRegistry:
            from convener.chat.tools import chat_tools

            return chat_tools(self.chat)

        def knowledge() -> ToolRegistry:
            from convener.knowledge.tools import knowledge_tools

            return knowledge_tools(self.knowledge, self.ingests)

        def analytics() -> ToolRegistry:
            from convener.analytics.tools import analytics_tools

            return analytics_tools(self.analytics)

        available: dict[str, Callable[[], ToolRegistry]] = {
            "ces": ces, "chat": chat, "knowledge": knowledge, "analytics": analytics}
        return {name: available[name]() for name in self.settings.services}

    def close(self) -> None:
        # Not under the building lock: stopping the job queue waits for a worker thread that may be building.
        built = self._built.snapshot()
        if "jobs" in built:
            built["jobs"].close()
        if "analytics" in built:
            built["analytics"].close()
        if self._provider is not None:
            from convener.llm.base import close_provider

            close_provider(self._provider)
        self.database.dispose()


def open_engine(settings: Settings, database: Database) -> Engine:
    """The job engine ``settings.jobs`` names, on this store."""
    if settings.jobs == "procrastinate":
        from convener.jobs.procrastinate_engine import ProcrastinateEngine  # only PostgreSQL installations need it

        return ProcrastinateEngine(database, stall_seconds=settings.job_lease_seconds)
    from convener.jobs.leases import LeaseEngine

    return LeaseEngine(database, lease_seconds=settings.job_lease_seconds)
