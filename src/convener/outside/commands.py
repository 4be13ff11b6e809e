"""A program a caller names for the server to start: a stdio MCP toolset's ``command``.

A command must be listed in ``CONVENER_MCP_STDIO_COMMANDS`` exactly as it will be executed (``python3`` and
``/usr/bin/python3`` are different entries). Its arguments are not restricted, so an operator lists only
programs that are safe to run with any arguments, or a wrapper script.
"""

from __future__ import annotations

import pathlib
from collections.abc import Mapping, Sequence

from convener.api.errors import InvalidArgument, PermissionDenied

SETTING = "CONVENER_MCP_STDIO_COMMANDS"


def check_command(command: str, args: Sequence[str], env: Mapping[str, str], allowed: Sequence[str],
                  field: str) -> None:
    """INVALID_ARGUMENT for malformed arguments or environment, PERMISSION_DENIED for an unlisted command."""
    if not command.strip():
        raise InvalidArgument(f"{field}: command is required")
    if command not in allowed:
        shown = pathlib.PurePath(command[:200]).name or "the command"
        raise PermissionDenied(f'{field}: command "{shown}" is not one the server may start; the operator can add '
                               f"it to {SETTING}")
    texts = [*args, *env.keys(), *env.values()]
    if any("\0" in text for text in texts):
        raise InvalidArgument(f"{field}: args and env must not contain NUL characters")
    if any(not key or "=" in key for key in env):
        raise InvalidArgument(f"{field}: environment variable names must be non-empty and contain no '='")
