"""How a tool or an agent reports that it failed at run time.

A failing tool does not fail the session: the runtime turns a ``ToolFailure`` into an error
tool response (``{"error": ...}``) and an ``errorInfo`` on the tool's span, and the agent goes on.
A failing agent (a crashing python agent, a webhook that times out) ends the turn with
``AgentFailure``, which the session reports to its caller.
"""

from __future__ import annotations


class ToolFailure(Exception):
    """A tool call that did not produce a result; ``message`` is safe to show to the model and the user."""

    def __init__(self, message: str, *, code: str = "UNKNOWN") -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        """A google.rpc code name: DEADLINE_EXCEEDED, UNAVAILABLE, INVALID_ARGUMENT, ..."""


class AgentFailure(Exception):
    """An agent that could not produce its turn; ``message`` is safe to show to the caller."""

    def __init__(self, message: str, *, code: str = "UNKNOWN") -> None:
        super().__init__(message)
        self.message = message
        self.code = code
