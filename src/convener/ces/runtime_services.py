"""The services that define and run agents: they share one store and settings, and each is built on first use.

A command uses a few of them: ``convener eval run`` needs the evaluations, the sessions they play and the app
versions those read, not the checks that guard writing an agent (which import the OpenAPI, MCP and playbook
machinery, httpx and jinja2) nor the YAML bundles and app transfers. Their modules are imported when they are
first built.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from convener.built_once import BuiltOnce

if TYPE_CHECKING:
    from convener.api.paging import PageTokens
    from convener.ces.apps import AppService
    from convener.ces.bundles import Bundles
    from convener.ces.catalog import PartService
    from convener.ces.checks import Checks
    from convener.ces.conversations import ConversationService
    from convener.ces.definitions import Agent, Guardrail, Tool, Toolset
    from convener.ces.deployments import Deployment
    from convener.ces.evaluation.service import EvaluationService
    from convener.ces.sessions import SessionService
    from convener.ces.transfers import AppTransfers
    from convener.ces.versions import VersionService
    from convener.config import Settings
    from convener.jobs.queue import Jobs
    from convener.llm.base import ModelProvider
    from convener.longrunning.service import OperationService
    from convener.outside.gate import Gate
    from convener.store.database import Database


def _wire(names: tuple[str, ...]) -> frozenset[str]:
    return frozenset("".join(part.title() if i else part for i, part in enumerate(name.split("_"))) for name in names)


class Runtime:
    """The agent runtime's services, each built when first used (``agents``, ``sessions``, ``evaluations``...)."""

    def __init__(self, database: Database, tokens: PageTokens, settings: Settings, apps: AppService,
                 conversations: ConversationService, provider: Callable[[], ModelProvider | None],
                 operations: OperationService, jobs: Jobs, gate: Gate) -> None:
        self.operations = operations
        self._database = database
        self._tokens = tokens
        self._settings = settings
        self._apps = apps
        self._conversations = conversations
        self._provider = provider
        self._jobs = jobs
        self._gate = gate
        self._built = BuiltOnce()

    def enlist_tasks(self) -> None:
        """Build the services that define job tasks, so that a worker of this process knows every task."""
        self.evaluations  # noqa: B018 (built for the task it registers)
        self.transfers  # noqa: B018

    @property
    def _checks(self) -> Checks:
        from convener.ces.checks import Checks

        return self._built.get("checks", lambda: Checks(self._settings))

    @property
    def agents(self) -> PartService[Agent]:
        def build() -> PartService[Agent]:
            from convener.ces.catalog import PartKind, PartService
            from convener.ces.definitions import AGENT_KINDS, Agent, output_only
            from convener.ces.names import AgentName

            return PartService(PartKind(Agent, AgentName, "agent", output_only(Agent), self._checks.agent,
                                        oneofs=(_wire(AGENT_KINDS),)), self._database, self._tokens, self._apps)

        return self._built.get("agents", build)

    @property
    def tools(self) -> PartService[Tool]:
        def build() -> PartService[Tool]:
            from convener.ces.catalog import PartKind, PartService
            from convener.ces.checks import tool_display_name
            from convener.ces.definitions import TOOL_KINDS, Tool, output_only
            from convener.ces.names import ToolName

            return PartService(PartKind(Tool, ToolName, "tool", output_only(Tool), self._checks.tool,
                                        oneofs=(_wire(TOOL_KINDS),), derive=tool_display_name),
                               self._database, self._tokens, self._apps)

        return self._built.get("tools", build)

    @property
    def toolsets(self) -> PartService[Toolset]:
        def build() -> PartService[Toolset]:
            from convener.ces.catalog import PartKind, PartService
            from convener.ces.definitions import Toolset, output_only
            from convener.ces.names import ToolsetName

            return PartService(PartKind(Toolset, ToolsetName, "toolset", output_only(Toolset), self._checks.toolset),
                               self._database, self._tokens, self._apps)

        return self._built.get("toolsets", build)

    @property
    def guardrails(self) -> PartService[Guardrail]:
        def build() -> PartService[Guardrail]:
            from convener.ces.catalog import PartKind, PartService
            from convener.ces.definitions import GUARDRAIL_KINDS, Guardrail, output_only
            from convener.ces.names import GuardrailName

            return PartService(PartKind(Guardrail, GuardrailName, "guardrail", output_only(Guardrail),
                                        self._checks.guardrail, oneofs=(_wire(GUARDRAIL_KINDS),)),
                               self._database, self._tokens, self._apps)

        return self._built.get("guardrails", build)

    @property
    def versions(self) -> VersionService:
        def build() -> VersionService:
            from convener.ces.catalog import PartKind, PartService
            from convener.ces.definitions import AppVersion, output_only
            from convener.ces.names import AppVersionName
            from convener.ces.versions import VersionService

            return VersionService(PartService(
                PartKind(AppVersion, AppVersionName, "appVersion", output_only(AppVersion),
                         lambda part, name, parts: part),
                self._database, self._tokens, self._apps,
            ))

        return self._built.get("versions", build)

    @property
    def deployments(self) -> PartService[Deployment]:
        def build() -> PartService[Deployment]:
            from convener.ces.catalog import PartKind, PartService
            from convener.ces.definitions import output_only
            from convener.ces.deployments import Deployment, check_deployment
            from convener.ces.names import DeploymentName

            return PartService(PartKind(Deployment, DeploymentName, "deployment", output_only(Deployment),
                                        check_deployment), self._database, self._tokens, self._apps)

        return self._built.get("deployments", build)

    @property
    def sessions(self) -> SessionService:
        def build() -> SessionService:
            from convener.ces.sessions import SessionService

            return SessionService(self._database, self._settings, self._apps, self._conversations, self.versions,
                                  self._provider)

        return self._built.get("sessions", build)

    @property
    def evaluations(self) -> EvaluationService:
        def build() -> EvaluationService:
            from convener.ces.evaluation.service import EvaluationService
            from convener.ces.evaluation.simulated_user import simulated_user
            from convener.llm.judges import JudgeOf

            provider = self._provider
            return EvaluationService(self._database, self._tokens, self._apps, self._conversations, self.sessions,
                                     self.operations, JudgeOf(provider, self._settings.judge_embeddings),
                                     lambda: simulated_user(provider()), self._jobs)

        return self._built.get("evaluations", build)

    @property
    def bundles(self) -> Bundles:
        def build() -> Bundles:
            from convener.ces.bundles import Bundles

            return Bundles(self._apps, self.agents, self.tools, self.toolsets, self.guardrails)

        return self._built.get("bundles", build)

    @property
    def transfers(self) -> AppTransfers:
        def build() -> AppTransfers:
            from convener.ces.transfers import AppTransfers

            return AppTransfers(self.bundles, self.operations, self._jobs, self._gate)

        return self._built.get("transfers", build)
