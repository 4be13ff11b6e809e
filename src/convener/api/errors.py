"""One error tree for every service, with google.rpc canonical codes.

Domain code raises these; adapters (MCP tools, CLI) render them once as ``CODE: message``.
Anything else that escapes a handler is a bug and is reported as ``INTERNAL`` without its text,
so no Python exception, stack trace or SQL ever reaches a client.
"""

from __future__ import annotations

from enum import Enum

from pydantic import ValidationError


class Code(Enum):
    """google.rpc.Code values used by Convener (name → HTTP status, for reference)."""

    CANCELLED = 1
    INVALID_ARGUMENT = 3
    DEADLINE_EXCEEDED = 4
    NOT_FOUND = 5
    ALREADY_EXISTS = 6
    PERMISSION_DENIED = 7
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    ABORTED = 10
    UNIMPLEMENTED = 12
    INTERNAL = 13
    UNAVAILABLE = 14
    UNAUTHENTICATED = 16


class ApiError(Exception):
    """An error meant for the caller: its message is safe to show as it is."""

    code: Code = Code.INTERNAL

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return f"{self.code.name}: {self.message}"


class InvalidArgument(ApiError):
    code = Code.INVALID_ARGUMENT


class NotFound(ApiError):
    code = Code.NOT_FOUND


class AlreadyExists(ApiError):
    code = Code.ALREADY_EXISTS


class PermissionDenied(ApiError):
    code = Code.PERMISSION_DENIED


class FailedPrecondition(ApiError):
    code = Code.FAILED_PRECONDITION


class Aborted(ApiError):
    code = Code.ABORTED


class Unauthenticated(ApiError):
    code = Code.UNAUTHENTICATED


class Unimplemented(ApiError):
    code = Code.UNIMPLEMENTED


class Internal(ApiError):
    code = Code.INTERNAL


class Unavailable(ApiError):
    code = Code.UNAVAILABLE


class DeadlineExceeded(ApiError):
    code = Code.DEADLINE_EXCEEDED


class ResourceExhausted(ApiError):
    code = Code.RESOURCE_EXHAUSTED


INTERNAL_MESSAGE = "the server failed to handle the request; see the server log"


def describe_validation(error: ValidationError) -> str:
    """Pydantic's findings, field by field, without echoing the caller's input back."""
    problems = []
    for item in error.errors(include_url=False, include_input=False, include_context=False)[:5]:
        where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in item["loc"]).lstrip(".")
        where = where or "request"
        problems.append(f"{where}: {item['msg']}")
    more = error.error_count() - len(problems)
    return "; ".join(problems) + (f"; and {more} more" if more > 0 else "")
