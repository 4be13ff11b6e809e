"""A result's plan: how it will run, decided once when its run starts and kept in ``evaluation_results.plan``.

The run decides everything a result needs (the evaluation as it is then, the golden run method, the tool-call
behaviour, the app version, the criteria its expectations name, the persona, who opens a scenario) so that
whichever worker plays the result later, and however the app changed meanwhile, plays the same thing. The
evaluation carries its own metric thresholds (``evaluationMetricsThresholdOverride``), so scoring reads them
from the plan too.

The column holds the plan's proto3-style JSON (camelCase keys; an unset persona or app version and empty
criteria omitted). Rows written before this model (``"persona": null``, ``"appVersion": ""`` for the draft)
read the same.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field, field_validator

from convener.api.protojson import ProtoModel
from convener.ces.evaluation.models import Evaluation, EvaluationExpectation, EvaluationPersona
from convener.ces.evaluation.replay import ReplayPlan
from convener.ces.evaluation.simulation import SimulationPlan
from convener.ces.models import EvaluationToolCallBehaviour, GoldenRunMethod, ScenarioConversationInitiator


class ResultPlan(ProtoModel):
    """What one evaluation result will follow when it is played and scored."""

    model_config = ConfigDict(frozen=True)

    evaluation: Evaluation
    """The evaluation as it was when the run started (its results and metrics left out)."""
    golden_run_method: GoldenRunMethod = GoldenRunMethod.STABLE
    """Used by golden evaluations only; recorded for every result as the run chose it."""
    tool_call_behaviour: EvaluationToolCallBehaviour = EvaluationToolCallBehaviour.REAL
    app_version: str | None = None
    """``…/versions/{version}``, or None for the draft."""
    criteria: list[EvaluationExpectation] = Field(default_factory=list)
    """The app's evaluation expectations the evaluation names, as they were when the run started."""
    persona: EvaluationPersona | None = None
    """The simulated user's persona (scenario evaluations), or None for the app's default behaviour."""
    initiator: ScenarioConversationInitiator = ScenarioConversationInitiator.USER
    """Who opens a scenario's conversation."""

    @field_validator("app_version", mode="before")
    @classmethod
    def _draft(cls, value: Any) -> Any:
        # Earlier rows stored the draft as "".
        return value or None

    def replay(self) -> ReplayPlan:
        """The golden replay this plan asks for; the evaluation must be a golden one."""
        golden = self.evaluation.golden
        if golden is None:
            raise ValueError(f"evaluation {self.evaluation.name} has no golden to replay")
        return ReplayPlan(golden=golden, method=self.golden_run_method, tool_calls=self.tool_call_behaviour,
                          app_version=self.app_version)

    def simulation(self) -> SimulationPlan:
        """The scenario simulation this plan asks for; the evaluation must be a scenario one."""
        scenario = self.evaluation.scenario
        if scenario is None:
            raise ValueError(f"evaluation {self.evaluation.name} has no scenario to simulate")
        return SimulationPlan(scenario=scenario, persona=self.persona, initiator=self.initiator,
                              tool_calls=self.tool_call_behaviour, app_version=self.app_version)
