"""The services that define and run agents, built together because they share one store and settings."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from convener.api.paging import PageTokens
from convener.ces.apps import AppService
from convener.ces.bundles import Bundles
from convener.ces.catalog import PartKind, PartService
from convener.ces.checks import Checks, tool_display_name
from convener.ces.conversations import ConversationService
from convener.ces.deployments import Deployment, check_deployment
from convener.ces.definitions import (
    AGENT_KINDS,
    GUARDRAIL_KINDS,
    TOOL_KINDS,
    Agent,
    AppVersion,
    Guardrail,
    Tool,
    Toolset,
    output_only,
)
from convener.ces.evaluation.service import EvaluationService
from convener.ces.evaluation.simulated_user import simulated_user
from convener.ces.names import AgentName, AppVersionName, DeploymentName, GuardrailName, ToolName, ToolsetName
from convener.ces.sessions import SessionService
from convener.ces.transfers import AppTransfers
from convener.ces.versions import VersionService
from convener.config import Settings
from convener.jobs.queue import Jobs
from convener.llm.base import ModelProvider
from convener.llm.judges import JudgeOf
from convener.longrunning.service import OperationService
from convener.outside.gate import Gate
from convener.store.database import Database


def _wire(names: tuple[str, ...]) -> frozenset[str]:
    return frozenset("".join(part.title() if i else part for i, part in enumerate(name.split("_"))) for name in names)


@dataclass
class Runtime:
    agents: PartService[Agent]
    tools: PartService[Tool]
    toolsets: PartService[Toolset]
    guardrails: PartService[Guardrail]
    versions: VersionService
    deployments: PartService[Deployment]
    sessions: SessionService
    bundles: Bundles
    transfers: AppTransfers
    operations: OperationService
    evaluations: EvaluationService

    @classmethod
    def build(cls, database: Database, tokens: PageTokens, settings: Settings, apps: AppService,
              conversations: ConversationService, provider: Callable[[], ModelProvider | None],
              operations: OperationService, jobs: Jobs, gate: Gate) -> Runtime:
        checks = Checks(settings)
        agents = PartService(PartKind(Agent, AgentName, "agent", output_only(Agent), checks.agent,
                                      oneofs=(_wire(AGENT_KINDS),)), database, tokens, apps)
        tools = PartService(PartKind(Tool, ToolName, "tool", output_only(Tool), checks.tool,
                                     oneofs=(_wire(TOOL_KINDS),), derive=tool_display_name), database, tokens, apps)
        toolsets = PartService(PartKind(Toolset, ToolsetName, "toolset", output_only(Toolset), checks.toolset),
                               database, tokens, apps)
        guardrails = PartService(PartKind(Guardrail, GuardrailName, "guardrail", output_only(Guardrail),
                                          checks.guardrail, oneofs=(_wire(GUARDRAIL_KINDS),)), database, tokens, apps)
        versions = VersionService(PartService(
            PartKind(AppVersion, AppVersionName, "appVersion", output_only(AppVersion), lambda part, name, parts: part),
            database, tokens, apps,
        ))
        deployments = PartService(PartKind(Deployment, DeploymentName, "deployment", output_only(Deployment),
                                           check_deployment), database, tokens, apps)
        sessions = SessionService(database, settings, apps, conversations, versions, provider)
        evaluations = EvaluationService(database, tokens, apps, conversations, sessions, operations,
                                        JudgeOf(provider, settings.judge_embeddings), lambda: simulated_user(provider()), jobs)
        bundles = Bundles(apps, agents, tools, toolsets, guardrails)
        return cls(agents, tools, toolsets, guardrails, versions, deployments, sessions, bundles,
                   AppTransfers(bundles, operations, jobs, gate), operations, evaluations)
