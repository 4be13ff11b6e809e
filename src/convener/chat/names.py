"""Resource names of the chat service, as Google Chat spells them."""

from __future__ import annotations

import dataclasses
import re
from typing import ClassVar

from convener.api.errors import InvalidArgument
from convener.api.names import ResourceName, check_id


@dataclasses.dataclass(frozen=True)
class SpaceName(ResourceName):
    template: ClassVar[str] = "spaces/{space}"
    space: str

    def thread(self, thread: str) -> ThreadName:
        return ThreadName(self.space, thread)

    def message(self, message: str) -> MessageName:
        return MessageName(self.space, message)


@dataclasses.dataclass(frozen=True)
class ThreadName(ResourceName):
    template: ClassVar[str] = "spaces/{space}/threads/{thread}"
    parent_type: ClassVar[type[ResourceName] | None] = SpaceName
    space: str
    thread: str


@dataclasses.dataclass(frozen=True)
class MessageName(ResourceName):
    template: ClassVar[str] = "spaces/{space}/messages/{message}"
    parent_type: ClassVar[type[ResourceName] | None] = SpaceName
    space: str
    message: str


@dataclasses.dataclass(frozen=True)
class MembershipName(ResourceName):
    template: ClassVar[str] = "spaces/{space}/members/{member}"
    parent_type: ClassVar[type[ResourceName] | None] = SpaceName
    space: str
    member: str


_EMAIL = re.compile(r"[^@\s/]{1,64}@[^@\s/]{1,255}")


def parse_user_reference(text: object, field: str) -> str:
    """``users/{user}`` or ``users/{email}`` (an alias of the user with that email, as in Google Chat);
    also a bare email, as Google's chat tools accept for participants and senders. Returns
    ``users/{id}`` or ``users/{email}`` with the email lowercased; resolved against the store later."""
    if not isinstance(text, str) or not text:
        raise InvalidArgument(f"{field} is required, as users/{{user}} or an email address")
    value = text.removeprefix("users/")
    if _EMAIL.fullmatch(value):
        return f"users/{value.lower()}"
    if text.startswith("users/"):
        return f"users/{check_id(value, field)}"
    raise InvalidArgument(f'{field} "{text[:80]}" must be users/{{user}} or an email address')
