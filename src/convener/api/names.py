"""Resource names (AIP-122) as small immutable value objects.

A name class declares its template once; ``parse`` checks a string against it and ``str`` formats
it back, so nobody splits ``projects/…/apps/…`` by hand. Resource IDs are restricted to a safe
alphabet so that a name can be used in a URL, a log line or a file path without escaping.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, ClassVar, Self

from convener.api.errors import InvalidArgument
from convener.outside.limits import RESOURCE_NAME_CHARACTERS

ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._~-]{0,127}")
"""Matched with ``fullmatch``: ``$`` would let a trailing newline through."""
MAX_NAME_LENGTH = RESOURCE_NAME_CHARACTERS


def check_id(value: str, what: str) -> str:
    if not isinstance(value, str) or not ID_PATTERN.fullmatch(value):
        raise InvalidArgument(
            f'{what} "{_clip(value)}" must be 1 to 128 letters, digits, ".", "_", "~" or "-", starting with a letter or digit'
        )
    return value


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


@dataclasses.dataclass(frozen=True)
class ResourceName:
    """Base of every name class. Subclasses are frozen dataclasses whose fields are the template's variables."""

    template: ClassVar[str]
    parent_type: ClassVar[type[ResourceName] | None] = None

    @classmethod
    def _segments(cls) -> list[tuple[str, bool]]:
        """(text, is_variable) for each "/"-separated segment of the template."""
        return [(s[1:-1], True) if s.startswith("{") else (s, False) for s in cls.template.split("/")]

    @classmethod
    def parse(cls, text: Any, field: str = "name") -> Self:
        """Parse ``text`` or raise INVALID_ARGUMENT naming the field and the expected format."""
        if not isinstance(text, str) or not text:
            raise InvalidArgument(f"{field} is required, in the format {cls.format()}")
        if len(text) > MAX_NAME_LENGTH:
            raise InvalidArgument(f"{field} is longer than {MAX_NAME_LENGTH} characters")
        parts = text.split("/")
        segments = cls._segments()
        if len(parts) != len(segments) or any(
            not variable and part != literal for part, (literal, variable) in zip(parts, segments, strict=True)
        ):
            raise InvalidArgument(f'{field} "{_clip(text)}" does not match the format {cls.format()}')
        values = {
            literal: check_id(part, f"{field}: {literal}")
            for part, (literal, variable) in zip(parts, segments, strict=True)
            if variable
        }
        return cls(**values)

    @classmethod
    def format(cls) -> str:
        """The template as callers read it in errors and descriptions."""
        return cls.template

    def __str__(self) -> str:
        return "/".join(getattr(self, text) if variable else text for text, variable in self._segments())

    @property
    def id(self) -> str:
        """The last variable of the name: the resource's own ID."""
        return str(getattr(self, self._segments()[-1][0]))

    @property
    def parent(self) -> ResourceName:
        if self.parent_type is None:
            raise TypeError(f"{type(self).__name__} has no parent")
        names = {f.name for f in dataclasses.fields(self.parent_type)}
        return self.parent_type(**{k: v for k, v in dataclasses.asdict(self).items() if k in names})


@dataclasses.dataclass(frozen=True)
class ProjectName(ResourceName):
    template: ClassVar[str] = "projects/{project}"
    project: str


@dataclasses.dataclass(frozen=True)
class LocationName(ResourceName):
    template: ClassVar[str] = "projects/{project}/locations/{location}"
    parent_type: ClassVar[type[ResourceName] | None] = ProjectName
    project: str
    location: str
