"""Settings: the one place defaults live.

Values come, strongest first, from keyword arguments (the CLI's flags), ``CONVENER_*`` environment
variables, then the TOML file named by ``CONVENER_CONFIG`` (if any).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Literal

import platformdirs
from pydantic import Field, SecretStr, field_validator
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from convener.outside import limits
from convener.outside.callables import check_operator_list
from convener.toolsets import DEFAULT_TOOLSETS, TOOLSETS, Selection, ToolsetError, parse_toolsets

SERVICES = ("ces", "chat", "knowledge", "analytics")
"""Services this build can serve, in the order /mcp lists their tools."""


def _default_data_dir() -> Path:
    """The platform's user data directory: `~/.local/share/convener` on Linux."""
    return Path(platformdirs.user_data_dir("convener", appauthor=False))


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CONVENER_", extra="ignore")

    data_dir: Path = Field(default_factory=_default_data_dir,
                           description="Where the embedded store, the demo's keys and work files live.")
    database_url: str | None = Field(
        default=None, description="The store, as a SQLAlchemy URL such as `postgresql://user@host/db` (needs the "
                                  "`postgres` extra); unset: the SQLite file `convener.db` in the data directory."
    )
    host: str = Field(default="127.0.0.1", description="Address the HTTP server listens on.")
    port: int = Field(default=8080, ge=0, le=65535, description="Port the HTTP server listens on.")
    transport: Literal["http", "stdio"] = Field(
        default="http", description="Streamable HTTP for any client, or stdio for a client that starts the server."
    )
    services: Annotated[tuple[str, ...], NoDecode] = Field(
        default=SERVICES, description=f"Services to serve, of {', '.join(SERVICES)}."
    )
    allow_anonymous: bool = Field(
        default=False,
        description="Serve HTTP callers that present no API key, as users/anonymous. Loopback hosts only.",
    )
    toolsets: Annotated[tuple[str, ...], NoDecode] = Field(
        default=DEFAULT_TOOLSETS,
        description=f"Toolsets /mcp and stdio serve when a client chooses none ({', '.join(TOOLSETS)}, all or "
                    "default); a client chooses with ?toolsets= on the URL.",
    )
    console: bool = Field(
        default=True, description="Serve the web console at /console (and a page at / that links to it)."
    )
    read_only: bool = Field(
        default=False, description="Serve read-only tools alone, on every endpoint; a client cannot lift it."
    )

    llm_provider: Literal["none", "openai", "gemini"] = Field(
        default="none",
        description="Model provider for llm agents: any OpenAI-compatible endpoint, Gemini, or none (offline).",
    )
    llm_base_url: str | None = Field(
        default=None, description="Base URL of an OpenAI-compatible API, e.g. http://127.0.0.1:11434/v1 for Ollama."
    )
    llm_model: str = Field(default="gpt-4o-mini", description="Model used when an agent or app names none.")
    llm_api_key: SecretStr | None = Field(default=None, description="API key of the provider, if it needs one.")
    llm_timeout_seconds: float = Field(default=60.0, gt=0, description="Deadline of one model call.")
    llm_max_retries: int = Field(default=3, ge=0, le=10, description="Retries, with backoff, on 429 and 5xx.")
    judge_embeddings: Literal["auto", "off"] = Field(
        default="auto",
        description="The offline judge's similarity with local sentence embeddings: auto uses them when the "
                    "embeddings extra is installed; off reads words alone.",
    )
    jobs: Literal["inline", "procrastinate"] = Field(
        default="inline",
        description="Where work that outlives a request (evaluation results, ingests) is queued: inline, in the "
                    "store with leases (any engine; every serve and worker process on the store takes part), or "
                    "procrastinate (PostgreSQL only; scale out with convener worker).",
    )
    worker: bool = Field(
        default=True, description="Run jobs in this process too (convener serve --no-worker turns it off)."
    )
    worker_concurrency: int = Field(
        default=4, ge=1, le=64, description="Jobs (evaluation results, ingests) a process runs at once."
    )
    job_lease_seconds: float = Field(
        default=30.0, ge=1, le=3600,
        description="How long a job stays with a worker that stopped answering before another takes it over.",
    )
    python_callables: Annotated[tuple[str, ...], NoDecode] = Field(
        default=(),
        description="The operator's own callables (module:qualname) python agents, tools and callbacks may name, "
                    "besides those registered by installed packages (the demo's tools).",
    )
    mcp_stdio_commands: Annotated[tuple[str, ...], NoDecode] = Field(
        default=(), description="Programs a stdio MCP toolset may start; HTTP toolsets need no listing."
    )
    url_hosts: Annotated[tuple[str, ...], NoDecode] = Field(
        default=(),
        description="Hosts (names, *.domain, or networks like 10.0.0.0/8) that URLs named in apps may reach: "
                    "OpenAPI tools, remote agents, MCP HTTP toolsets. Empty: any host.",
    )
    changelog_retention_days: int = Field(
        default=365, ge=0, le=36_500,
        description="Days an app's changelogs are kept (older ones are pruned as the app changes); 0 keeps them all.",
    )
    list_scan_rows: int = Field(default=limits.LIST_SCAN_ROWS, ge=1, le=10_000_000,
                                description="Conversations one list_conversations call examines when its filter "
                                            "reads a field no index orders; the page may then be short.")
    app_roots: Annotated[tuple[Path, ...], NoDecode] = Field(
        default=(), description="Folders start_export_app may write app archives to and start_import_app may read "
                                "them from (a path given to either); empty: only content given inline.",
    )
    knowledge_roots: Annotated[tuple[Path, ...], NoDecode] = Field(
        default=(), description="Folders the ingest_documents tool may read (the CLI's ingest reads any path)."
    )
    knowledge_embeddings: Literal["auto", "off"] = Field(
        default="auto",
        description="Semantic search with local embeddings: auto uses them when the embeddings extra is installed.",
    )

    analytics_roots: Annotated[tuple[Path, ...], NoDecode] = Field(
        default=(), description="Folders whose files the add_sql_source tool may register (the CLI may add any)."
    )
    analytics_row_limit: int = Field(default=limits.ANALYTICS_ROWS, ge=1, le=100_000,
                                     description="Rows a data agent's query may return (more are cut off).")
    analytics_timeout_seconds: float = Field(default=limits.ANALYTICS_SECONDS, gt=0, le=3600,
                                             description="Deadline of one data agent query.")
    analytics_result_bytes: int = Field(default=limits.ANALYTICS_RESULT_BYTES, ge=1_000, le=1_000_000_000,
                                        description="Bytes a data agent's query may return (more rows are cut off).")
    analytics_value_bytes: int = Field(default=limits.ANALYTICS_VALUE_BYTES, ge=100, le=1_000_000_000,
                                       description="Bytes of one value a data agent's query may make or return.")
    analytics_memory_limit_mb: int = Field(default=limits.ANALYTICS_MEMORY_MB, ge=16, le=1_048_576,
                                           description="DuckDB memory_limit of each DuckDB data source.")
    analytics_threads: int = Field(default=limits.ANALYTICS_THREADS, ge=1, le=256,
                                   description="DuckDB threads of each DuckDB data source.")
    analytics_spill_limit_mb: int = Field(default=limits.ANALYTICS_SPILL_MB, ge=0, le=16_777_216,
                                          description="Disk each DuckDB data source may spill to (0: none).")
    analytics_work_mem_mb: int = Field(default=limits.ANALYTICS_WORK_MEM_MB, ge=1, le=1_048_576,
                                       description="PostgreSQL work_mem of a data agent's query.")

    @field_validator("python_callables", "mcp_stdio_commands", "url_hosts", "knowledge_roots", "analytics_roots",
                     "app_roots", mode="before")
    @classmethod
    def _split_lists(cls, value: object) -> object:
        if isinstance(value, str):
            value = [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("python_callables")
    @classmethod
    def _callables_of_the_operator(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return check_operator_list(value)

    @field_validator("toolsets", mode="before")
    @classmethod
    def _split_toolsets(cls, value: object) -> object:
        if isinstance(value, str):
            value = value.split(",")
        return value

    @field_validator("toolsets")
    @classmethod
    def _known_toolsets(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        try:
            return tuple(sorted(parse_toolsets(value)))
        except ToolsetError as error:
            raise ValueError(str(error)) from None

    @property
    def selection(self) -> Selection:
        """The tools served when a client chooses none."""
        return Selection(frozenset(self.toolsets), self.read_only)

    @field_validator("services", mode="before")
    @classmethod
    def _split_services(cls, value: object) -> object:
        if isinstance(value, str):
            value = [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("services")
    @classmethod
    def _known_services(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = sorted(set(value) - set(SERVICES))
        if unknown:
            raise ValueError(f"unknown service(s) {', '.join(unknown)}; known: {', '.join(SERVICES)}")
        if not value:
            raise ValueError("at least one service must be enabled")
        return value

    @property
    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'convener.db'}"

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        config_file = os.environ.get("CONVENER_CONFIG")
        if config_file:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=config_file))
        return tuple(sources)
