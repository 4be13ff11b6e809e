"""Who is calling: the principal every service checks access and binds page tokens to."""

from __future__ import annotations

from dataclasses import dataclass

ALL_SCOPES = "*"


@dataclass(frozen=True)
class Caller:
    principal: str
    """``users/{user}``."""
    scopes: frozenset[str] = frozenset({ALL_SCOPES})
    """Services this caller may reach (``*`` for all)."""

    def may_use(self, service: str) -> bool:
        return ALL_SCOPES in self.scopes or service in self.scopes


LOCAL_USER = Caller("users/local")
"""The caller of a stdio server or of the CLI: whoever runs the process on this machine."""

ANONYMOUS = Caller("users/anonymous")
"""An HTTP caller without an API key, served only when the operator allowed it."""
