"""Resource names of the ces service."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from convener.api.names import LocationName, ResourceName


@dataclasses.dataclass(frozen=True)
class AppName(ResourceName):
    template: ClassVar[str] = "projects/{project}/locations/{location}/apps/{app}"
    parent_type: ClassVar[type[ResourceName] | None] = LocationName
    project: str
    location: str
    app: str

    def conversation(self, conversation: str) -> ConversationName:
        return ConversationName(self.project, self.location, self.app, conversation)

    def child(self, kind: type[AppChildName], resource: str) -> AppChildName:
        return kind(self.project, self.location, self.app, resource)


@dataclasses.dataclass(frozen=True)
class AppChildName(ResourceName):
    """A resource directly under an app; subclasses differ only in their collection."""

    collection: ClassVar[str]
    parent_type: ClassVar[type[ResourceName] | None] = AppName
    project: str
    location: str
    app: str
    resource: str

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls.template = f"projects/{{project}}/locations/{{location}}/apps/{{app}}/{cls.collection}/{{resource}}"

    @classmethod
    def format(cls) -> str:
        return cls.template.replace("{resource}", "{" + cls.collection.removesuffix("s") + "}")

    @property
    def app_name(self) -> AppName:
        return AppName(self.project, self.location, self.app)


class AgentName(AppChildName):
    collection = "agents"


class ToolName(AppChildName):
    collection = "tools"


class ToolsetName(AppChildName):
    collection = "toolsets"


class GuardrailName(AppChildName):
    collection = "guardrails"


class AppVersionName(AppChildName):
    collection = "versions"


class DeploymentName(AppChildName):
    collection = "deployments"


class SessionName(AppChildName):
    collection = "sessions"


class ChangelogName(AppChildName):
    collection = "changelogs"


class EvaluationName(AppChildName):
    collection = "evaluations"

    def result(self, result_id: str) -> EvaluationResultName:
        return EvaluationResultName(self.project, self.location, self.app, self.resource, result_id)


class EvaluationDatasetName(AppChildName):
    collection = "evaluationDatasets"


class EvaluationExpectationName(AppChildName):
    collection = "evaluationExpectations"


class EvaluationPersonaName(AppChildName):
    collection = "evaluationPersonas"


class EvaluationRunName(AppChildName):
    collection = "evaluationRuns"


@dataclasses.dataclass(frozen=True)
class EvaluationResultName(ResourceName):
    template: ClassVar[str] = (
        "projects/{project}/locations/{location}/apps/{app}/evaluations/{evaluation}/results/{result}"
    )
    project: str
    location: str
    app: str
    evaluation: str
    result: str

    @property
    def app_name(self) -> AppName:
        return AppName(self.project, self.location, self.app)


@dataclasses.dataclass(frozen=True)
class ConversationName(ResourceName):
    template: ClassVar[str] = "projects/{project}/locations/{location}/apps/{app}/conversations/{conversation}"
    parent_type: ClassVar[type[ResourceName] | None] = AppName
    project: str
    location: str
    app: str
    conversation: str

    @property
    def app_name(self) -> AppName:
        return AppName(self.project, self.location, self.app)
