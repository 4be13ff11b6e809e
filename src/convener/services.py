"""The services of one Convener installation, built once from Settings and handed to every adapter."""

from __future__ import annotations

from dataclasses import dataclass

from convener.api.paging import PageTokens
from convener.ces.apps import AppService
from convener.ces.conversations import ConversationService
from convener.ces.tools import ces_tools
from convener.config import Settings
from convener.store.database import Database
from convener.tooling import ToolRegistry


@dataclass
class Services:
    settings: Settings
    database: Database
    apps: AppService
    conversations: ConversationService

    @classmethod
    def open(cls, settings: Settings) -> Services:
        """Connect to the store, bring its schema up to date, and build every service."""
        database = Database(settings.resolved_database_url)
        database.migrate()
        tokens = PageTokens(database.installation_secret())
        apps = AppService(database, tokens)
        return cls(settings, database, apps, ConversationService(database, tokens, apps))

    def registries(self) -> dict[str, ToolRegistry]:
        """Tool registries of the enabled services, by service name."""
        available = {"ces": lambda: ces_tools(self.apps, self.conversations)}
        return {name: available[name]() for name in self.settings.services}

    def close(self) -> None:
        self.database.dispose()
