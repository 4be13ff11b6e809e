"""What one data source may spend on a query: memory, threads, spill disk, bytes of a result and of one value.

The service builds a ``Budget`` from the settings (defaults and their documentation are in
``convener.outside.limits``) and every engine it opens takes it: DuckDB as its configuration (set before the
configuration is locked), SQLite as ``SQLITE_LIMIT_LENGTH``, PostgreSQL as ``work_mem``, and every engine's
fetch as the byte caps of ``capping``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from convener.analytics.spill import SpillFolder
from convener.outside.limits import (
    ANALYTICS_MEMORY_MB,
    ANALYTICS_RESULT_BYTES,
    ANALYTICS_SPILL_MB,
    ANALYTICS_THREADS,
    ANALYTICS_VALUE_BYTES,
    ANALYTICS_WORK_MEM_MB,
)

if TYPE_CHECKING:
    from convener.config import Settings

DuckDBConfig = dict[str, str | bool | int | float | list[str]]

DUCKDB_SAFETY: DuckDBConfig = {
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
    "allow_persistent_secrets": False,
    "python_enable_replacements": False,  # no scanning the server's own DataFrames by name
}


@dataclass(frozen=True)
class Budget:
    memory_mb: int = ANALYTICS_MEMORY_MB
    threads: int = ANALYTICS_THREADS
    spill_mb: int = ANALYTICS_SPILL_MB
    spill: SpillFolder | None = None
    """The process's spill folder, made when a database first needs it; None: DuckDB never spills to disk."""
    result_bytes: int = ANALYTICS_RESULT_BYTES
    value_bytes: int = ANALYTICS_VALUE_BYTES
    work_mem_mb: int = ANALYTICS_WORK_MEM_MB

    def duckdb_config(self) -> DuckDBConfig:
        """A new DuckDB database's configuration: safety first, then its limits. Each database spills into a
        folder of its own below the process's, since two databases sharing one temp folder would share
        file names; without a spill root, DuckDB keeps everything in its memory limit (and would otherwise
        make a ``.tmp`` folder next to its file, or in the working directory)."""
        spill = "" if self.spill is None or self.spill_mb == 0 else str(self.spill.ensure() / uuid.uuid4().hex)
        config: DuckDBConfig = {**DUCKDB_SAFETY, "memory_limit": f"{self.memory_mb}MB", "threads": self.threads,
                                "temp_directory": spill}
        if spill:
            config["max_temp_directory_size"] = f"{self.spill_mb}MB"
        return config

    def locked_duckdb_config(self) -> DuckDBConfig:
        """For a database file opened as it is: no file, network or extension access, and no SET."""
        return {**self.duckdb_config(), "enable_external_access": False, "lock_configuration": True}


DEFAULT_BUDGET = Budget()


def analytics_budget(settings: Settings) -> Budget:
    """The budget the settings give (the spill root is the service's own folder, set when it opens it)."""
    return Budget(memory_mb=settings.analytics_memory_limit_mb, threads=settings.analytics_threads,
                  spill_mb=settings.analytics_spill_limit_mb, result_bytes=settings.analytics_result_bytes,
                  value_bytes=settings.analytics_value_bytes, work_mem_mb=settings.analytics_work_mem_mb)
