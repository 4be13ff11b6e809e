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
