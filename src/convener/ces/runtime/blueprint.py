"""What a session runs: one consistent view of an app, from the draft or from an app version."""

from __future__ import annotations

from dataclasses import dataclass

from convener.ces.definitions import Agent, AppSnapshot, Guardrail, Tool, Toolset
from convener.ces.models import App
from convener.ces.names import AgentName, GuardrailName, ToolName, ToolsetName


@dataclass(frozen=True)
class Blueprint:
    app: App
    agents: dict[str, Agent]
    tools: dict[str, Tool]
    toolsets: dict[str, Toolset]
    guardrails: dict[str, Guardrail]
    version: str | None = None
    """The app version's name, or None for the draft."""

    @classmethod
    def from_snapshot(cls, snapshot: AppSnapshot, version: str | None) -> Blueprint:
        return cls(
            app=snapshot.app or App(),
            agents={AgentName.parse(a.name).id: a for a in snapshot.agents or ()},
            tools={ToolName.parse(t.name).id: t for t in snapshot.tools or ()},
            toolsets={ToolsetName.parse(t.name).id: t for t in snapshot.toolsets or ()},
            guardrails={GuardrailName.parse(g.name).id: g for g in snapshot.guardrails or ()},
            version=version,
        )

    def snapshot(self) -> AppSnapshot:
        return AppSnapshot(
            app=self.app,
            agents=list(self.agents.values()) or None,
            tools=list(self.tools.values()) or None,
            toolsets=list(self.toolsets.values()) or None,
            guardrails=list(self.guardrails.values()) or None,
        )

    def agent_name(self, agent_id: str) -> str:
        return f"{self.app.name}/agents/{agent_id}"

    def display_name(self, agent_id: str) -> str:
        agent = self.agents.get(agent_id)
        return (agent.display_name if agent else None) or agent_id
