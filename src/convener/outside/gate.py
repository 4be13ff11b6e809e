"""The gate, bound to one installation's settings: the single place services ask before reaching outside.

Each check lives in its own module (``paths``, ``databases``, ``urls``, ``commands``, ``callables``); the gate
holds what they need from the settings (roots, the store's own location, the operator's lists), so a service
passes only what the caller named and the field it came in.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from convener.config import Settings
from convener.outside import callables, commands, databases, paths, urls
from convener.outside.databases import DatabaseUrl
from convener.outside.own import OwnStore
from convener.outside.paths import Roots


@dataclass(frozen=True)
class Gate:
    own: OwnStore
    knowledge_roots: Roots
    analytics_roots: Roots
    app_roots: Roots
    url_hosts: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    callables: tuple[str, ...] = ()

    @classmethod
    def of(cls, settings: Settings) -> Gate:
        return cls(
            own=OwnStore.of(settings.data_dir, settings.resolved_database_url),
            knowledge_roots=Roots.of(settings.knowledge_roots, "CONVENER_KNOWLEDGE_ROOTS", "convener knowledge ingest"),
            analytics_roots=Roots.of(settings.analytics_roots, "CONVENER_ANALYTICS_ROOTS", "convener data add-source"),
            app_roots=Roots.of(settings.app_roots, "CONVENER_APP_ROOTS", "convener apps export/import"),
            url_hosts=settings.url_hosts,
            commands=settings.mcp_stdio_commands,
            callables=settings.python_callables,
        )

    def path(self, value: str | os.PathLike[str], roots: Roots, field: str = "path") -> Path:
        """A file or folder a remote caller names: its real path, inside ``roots``, not the store."""
        return paths.check_path(value, roots, self.own, field)

    def local_path(self, value: str | os.PathLike[str], field: str = "path") -> Path:
        """A file or folder the operator names on the server (the CLI): any real path but the store's."""
        return paths.check_local_path(value, self.own, field)

    def database_url(self, value: str, roots: Roots | None, field: str = "location") -> DatabaseUrl:
        """A database URL: files inside ``roots`` (any but the store's when None, for the CLI), never the store."""
        return databases.check_database_url(value, roots, self.own, field)

    def url(self, value: str, field: str) -> str:
        """An http(s) URL the server will call."""
        return urls.check_url(value, self.url_hosts, field)

    def command(self, command: str, args: Sequence[str], env: Mapping[str, str], field: str) -> None:
        """A program the server will start."""
        commands.check_command(command, args, env, self.commands, field)

    def callable(self, spec: str, field: str) -> Callable[..., Any]:
        """A registered Python callable."""
        return callables.load_callable(spec, self.callables, field)
