"""Who is calling: the principal every service checks access and binds page tokens to, and its scopes."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

ALL_SCOPES = "*"
GOOGLE_SCOPE_PREFIX = "https://www.googleapis.com/auth/"

SERVICE_SCOPES: dict[str, tuple[str, ...]] = {
    "chat": (
        "chat.messages", "chat.messages.readonly", "chat.messages.create",
        "chat.spaces", "chat.spaces.readonly", "chat.memberships", "chat.memberships.readonly",
    ),
    "knowledge": ("knowledge.readonly", "knowledge.admin"),
    "analytics": ("analytics.readonly", "analytics.admin"),
}
"""Google's OAuth scopes a key may carry, by service, written without their ``https://…/auth/`` prefix.
A service's own name (``chat``) stands for all of that service's scopes; ``*`` for every service."""


def normalise_scope(scope: str) -> str:
    """``https://www.googleapis.com/auth/chat.messages`` and ``chat.messages`` are the same scope."""
    scope = scope.strip()
    return scope.removeprefix(GOOGLE_SCOPE_PREFIX)


@dataclass(frozen=True)
class Caller:
    principal: str
    """``users/{user}`` (or ``users/{email}``, an alias of the user with that email)."""
    scopes: frozenset[str] = frozenset({ALL_SCOPES})
    """``*``, service names, and Google scopes such as ``chat.messages.readonly``."""

    def may_use(self, service: str) -> bool:
        return ALL_SCOPES in self.scopes or service in self.scopes or any(
            scope in self.scopes for scope in SERVICE_SCOPES.get(service, ())
        )

    def has_any(self, service: str, scopes: Iterable[str]) -> bool:
        """Whether the caller may call a tool of ``service`` that needs one of ``scopes`` (none: any caller)."""
        needed = frozenset(scopes)
        return not needed or ALL_SCOPES in self.scopes or service in self.scopes or bool(needed & self.scopes)


LOCAL_USER = Caller("users/local")
"""The caller of a stdio server or of the CLI: whoever runs the process on this machine."""

ANONYMOUS = Caller("users/anonymous")
"""An HTTP caller without an API key, served only when the operator allowed it."""
