"""Who is looking at the console, and the one way its views reach a service: a tool's own handler.

``ConsoleTools.call`` finds the tool by name, asks ``tooling.authorize`` (the check MCP calls make), parses
the arguments as a tool call's are, and runs the handler with the signed-in caller. A view therefore sees
exactly what the same key sees over MCP, and there is no second path to the store to keep in step.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
from starlette.requests import Request

from convener.api.errors import NotFound, PermissionDenied, ResourceExhausted
from convener.api.protojson import ProtoModel
from convener.auth.caller import ANONYMOUS, Caller
from convener.auth.http import is_loopback
from convener.auth.keys import ApiKeys
from convener.console.security import SESSION_COOKIE, Signer
from convener.outside.limits import CONSOLE_STREAMS
from convener.tooling import ToolRegistry, ToolSpec, authorize, parse_arguments

logger = logging.getLogger(__name__)

Resp = TypeVar("Resp", bound=ProtoModel)


@dataclass(frozen=True)
class Viewer:
    """The caller of a console request, and how they got in."""

    caller: Caller
    signed_in: bool
    """By a session cookie or a Bearer key (else anonymous, on a loopback server that allows it)."""


class ConsoleTools:
    """The tools of the enabled services, called as their MCP calls are (same checks, same handlers)."""

    def __init__(self, registries: dict[str, ToolRegistry], *, read_only: bool) -> None:
        self._specs: dict[str, tuple[str, ToolSpec[Any, Any]]] = {
            name: (service, spec) for service, registry in registries.items() for name, spec in registry.tools.items()
        }
        self._read_only = read_only
        self._streams = threading.BoundedSemaphore(CONSOLE_STREAMS)

    def may_call(self, name: str, caller: Caller) -> bool:
        """Whether a link to what ``name`` shows is worth drawing for ``caller``."""
        found = self._specs.get(name)
        if found is None:
            return False
        service, spec = found
        if self._read_only and not spec.read_only:
            return False  # the call would be refused: no button for it
        return caller.may_use(service) and caller.has_any(service, spec.scopes)

    def _prepared(self, name: str, arguments: dict[str, Any], caller: Caller) -> tuple[ToolSpec[Any, Any], Any]:
        """The tool ``name`` and its parsed request, once the caller may call it here."""
        found = self._specs.get(name)
        if found is None:
            raise NotFound(f"this server does not serve {name} (is its service enabled?)")
        service, spec = found
        authorize(spec, service, caller)
        if self._read_only and not spec.read_only:
            raise PermissionDenied(f"{name} changes data, and this server serves read-only tools alone")
        return spec, parse_arguments(spec, arguments)

    async def call(self, name: str, arguments: dict[str, Any], caller: Caller, response: type[Resp]) -> Resp:
        """The tool ``name``'s answer to ``arguments`` (its wire form, camelCase), as ``caller``; ApiErrors
        (and pydantic's ValidationError for bad arguments) propagate for the view to show."""
        spec, request = self._prepared(name, arguments, caller)
        return _answer(name, await anyio.to_thread.run_sync(spec.handler, request, caller), response)

    async def call_reporting(self, name: str, arguments: dict[str, Any], caller: Caller,
                             response: type[Resp]) -> AsyncIterator[str | Resp]:
        """As ``call``, but first each progress message the tool reports as it works (the text an MCP client
        gets as a progress notification), the moment it is reported; then the answer, last. An error before
        the first report is raised by the first ``anext``, so a page can still answer with its status."""
        spec, request = self._prepared(name, arguments, caller)
        handler = spec.progress_handler
        if handler is None:
            yield _answer(name, await anyio.to_thread.run_sync(spec.handler, request, caller), response)
            return
        # The work runs on a thread of its own and hands each event to the event loop, never to the browser: one
        # that reads slowly (or leaves) never holds it up, and the answer is recorded whether or not it is read.
        # The page waits on the loop, not on a worker thread: streams left open cannot use up the threads every
        # tool call runs on. At most CONSOLE_STREAMS run at once; one more is refused before it starts.
        if not self._streams.acquire(blocking=False):
            raise ResourceExhausted(f"{CONSOLE_STREAMS} console pages are already running work in this server "
                                    f"(console.streams); try again when one has finished")
        token = anyio.lowlevel.current_token()
        send, receive = anyio.create_memory_object_stream[tuple[str, Any]](math.inf)

        def put(kind: str, value: Any) -> None:
            try:
                anyio.from_thread.run_sync(send.send_nowait, (kind, value), token=token)
            except Exception:  # noqa: BLE001 - the page left, or the loop is gone: nobody is left to show it to
                logger.debug("console %s event dropped", name, exc_info=True)

        def report(done: float, total: float | None, text: str | None) -> None:
            put("report", text or "")

        def work() -> None:
            outcome: tuple[str, Any]
            try:
                outcome = ("answer", handler(request, caller, report))
            except BaseException as error:  # noqa: BLE001 - handed to the page, which shows or re-raises it
                outcome = ("error", error)
            finally:
                # free before the page hears the outcome: a page that starts again at once finds its slot
                self._streams.release()
            put(*outcome)

        threading.Thread(target=work, name=f"console-{name}", daemon=True).start()
        with send, receive:  # closed by the page, when it has the answer or leaves: later events are dropped
            async for kind, value in receive:
                if kind == "report":
                    yield value
                elif kind == "error":
                    raise value
                else:
                    yield _answer(name, value, response)
                    return


def _answer(name: str, result: Any, response: type[Resp]) -> Resp:
    if not isinstance(result, response):
        raise TypeError(f"{name} answered {type(result).__name__}, not {response.__name__}")
    return result


class Callers:
    """Resolves a request's caller: a Bearer key, else the session cookie, else anonymous where allowed."""

    def __init__(self, keys: ApiKeys, signer: Signer, *, allow_anonymous: bool) -> None:
        self.keys = keys
        self.signer = signer
        self.allow_anonymous = allow_anonymous

    async def viewer(self, request: Request) -> Viewer | None:
        header = request.headers.get("authorization", "")
        scheme, _, credential = header.partition(" ")
        if scheme.lower() == "bearer" and credential.strip():
            caller = await anyio.to_thread.run_sync(self.keys.caller, credential.strip())
            return Viewer(caller, True) if caller else None
        session = self.signer.session(request.cookies.get(SESSION_COOKIE))
        if session is not None:
            caller = await anyio.to_thread.run_sync(self.keys.caller_of_fingerprint, session.fingerprint)
            if caller is not None:
                return Viewer(caller, True)
        client = request.client.host if request.client else None
        if not header and self.allow_anonymous and is_loopback(client):
            return Viewer(ANONYMOUS, False)
        return None
