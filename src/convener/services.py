"""The services of one Convener installation, built once from Settings and handed to every adapter."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from convener.analytics.budget import analytics_budget
from convener.analytics.service import AnalyticsService
from convener.analytics.tools import analytics_tools
from convener.api.paging import PageTokens
from convener.ces.apps import AppService
from convener.ces.conversations import ConversationService
from convener.ces.runtime_services import Runtime
from convener.ces.tools import ces_tools
from convener.chat.service import ChatService
from convener.chat.tools import chat_tools
from convener.config import Settings
from convener.knowledge.embeddings import default_embedder
from convener.knowledge.operations import Ingests
from convener.knowledge.service import KnowledgeService
from convener.knowledge.tools import knowledge_tools
from convener.jobs.engine import Engine
from convener.jobs.leases import LeaseEngine
from convener.jobs.queue import Jobs
from convener.llm.base import ModelProvider, close_provider
from convener.llm.providers import provider_from_settings
from convener.longrunning.service import OperationService
from convener.outside.gate import Gate
from convener.store.database import Database
from convener.tooling import ToolRegistry


@dataclass
class Services:
    settings: Settings
    database: Database
    apps: AppService
    conversations: ConversationService
    gate: Gate = field(init=False)
    operations: OperationService = field(init=False)
    jobs: Jobs = field(init=False)
    """Work that outlives a request; this process runs it too unless ``settings.worker`` is off."""
    """The one place that decides what callers may reach outside the store."""
    runtime: Runtime = field(init=False)
    chat: ChatService = field(init=False)
    knowledge: KnowledgeService = field(init=False)
    ingests: Ingests = field(init=False)
    analytics: AnalyticsService = field(init=False)
    _provider: ModelProvider | None = field(init=False, default=None)
    _provider_lock: threading.Lock = field(init=False, default_factory=threading.Lock)

    def __post_init__(self) -> None:
        tokens = self.conversations.tokens
        self.gate = Gate.of(self.settings)
        self.operations = OperationService(self.database, tokens)
        self.jobs = Jobs(open_engine(self.settings, self.database), self.operations.is_cancelled,
                         concurrency=self.settings.worker_concurrency, run_here=self.settings.worker)
        self.runtime = Runtime.build(self.database, tokens, self.settings, self.apps, self.conversations, self.provider,
                                     self.operations, self.jobs)
        self.chat = ChatService(self.database, tokens)
        self.knowledge = KnowledgeService(self.database, tokens, default_embedder(self.settings.knowledge_embeddings),
                                          self.provider, gate=self.gate)
        self.ingests = Ingests(self.knowledge, self.operations, self.jobs)
        self.analytics = AnalyticsService(self.database, tokens, self.provider, gate=self.gate,
                                          row_limit=self.settings.analytics_row_limit,
                                          timeout_seconds=self.settings.analytics_timeout_seconds,
                                          budget=analytics_budget(self.settings), data_dir=self.settings.data_dir)

    def provider(self) -> ModelProvider | None:
        """The configured model provider, made on first use (most sessions run no llm agent)."""
        if self.settings.llm_provider == "none":
            return None
        with self._provider_lock:
            if self._provider is None:
                self._provider = provider_from_settings(self.settings)
            return self._provider

    @classmethod
    def open(cls, settings: Settings) -> Services:
        """Connect to the store, bring its schema up to date, and build every service."""
        database = Database(settings.resolved_database_url)
        database.migrate()
        tokens = PageTokens(database.installation_secret())
        apps = AppService(database, tokens)
        return cls(settings, database, apps, ConversationService(database, tokens, apps, settings.list_scan_rows))

    def registries(self) -> dict[str, ToolRegistry]:
        """Tool registries of the enabled services, by service name."""
        available = {
            "ces": lambda: ces_tools(self.apps, self.conversations, self.runtime),
            "chat": lambda: chat_tools(self.chat),
            "knowledge": lambda: knowledge_tools(self.knowledge, self.ingests),
            "analytics": lambda: analytics_tools(self.analytics),
        }
        return {name: available[name]() for name in self.settings.services}

    def close(self) -> None:
        self.jobs.close()
        self.analytics.close()
        if self._provider is not None:
            close_provider(self._provider)
        self.database.dispose()


def open_engine(settings: Settings, database: Database) -> Engine:
    """The job engine ``settings.jobs`` names, on this store."""
    if settings.jobs == "procrastinate":
        from convener.jobs.procrastinate_engine import ProcrastinateEngine  # only PostgreSQL installations need it

        return ProcrastinateEngine(database, stall_seconds=settings.job_lease_seconds)
    return LeaseEngine(database, lease_seconds=settings.job_lease_seconds)
