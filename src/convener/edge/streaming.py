"""Which answer a request gets over HTTP: one JSON body, or an event stream of its progress, then its result.

A ``tools/call`` whose ``params._meta.progressToken`` is set, from a client that names ``text/event-stream``
in its ``Accept``, is answered with an SSE stream: each ``notifications/progress`` as an ``event: message``,
then the JSON-RPC result as the last event, then the stream ends. Every other request is answered with plain
JSON as before, so a curl call in Google's style, and the cached ``tools/list``, see no change.

Why two SDK session managers per endpoint (one ``json_response=True``, one streaming), the guard choosing: the
SDK (``mcp`` 2.3) fixes the response mode per manager, and in stateless mode builds each request's transport
from it. In JSON mode it drops a call's notifications (its ``message_router``: "A JSON body carries only the
response"). In SSE mode it answers *every* request as a stream, and refuses with 406 a client whose ``Accept``
names only ``application/json``: that would break the curl calls this server promises. Only its 2026-07-28
path chooses per request (JSON unless a notification comes), for clients that send that version, still with
the 406. Choosing inside one manager would mean overriding its private ``_handle_stateless_request``. The
guard has parsed the envelope already (``Envelope.progress_token``), so choosing costs one header read; the second
manager holds no per-request state, only a task group. Measured here (200 sequential ``list_apps`` calls,
SQLite, 2 shared cores, three rounds): 5.2-6.8 ms median as JSON, 8.2-8.7 ms as a stream; answering every call
as a stream would cost each about 3 ms, so only callers who ask for progress pay it.

A bare ``*/*`` (curl's default) does not count as asking for a stream: a client must name it, as the MCP SDKs
do. One that asks for progress but accepts only JSON gets JSON without notifications (the spec lets a server
send none) rather than the streaming manager's 406.

A client that hangs up mid-stream ends the stream and the call's handler, not the work: the tool runs on a
worker thread, which anyio lets finish, so an ingest still ends done (its operation says so). A client that
reads slowly never holds the work up either: ``convener.progress`` relays the notifications.
"""

from __future__ import annotations

from starlette.types import Scope

from convener.edge.wire import Envelope

EVENT_STREAM = "text/event-stream"
JSON_TYPES = frozenset({"application/json", "application/*", "*/*"})


def _accepted(scope: Scope) -> set[str]:
    values = [value for name, value in scope["headers"] if name == b"accept"]
    text = ",".join(value.decode("latin-1") for value in values)
    return {part.split(";")[0].strip().lower() for part in text.split(",")}


def wants_stream(scope: Scope, envelope: Envelope) -> bool:
    """Whether this request is answered with an event stream: a tool call that asks for progress, from a
    client that names ``text/event-stream`` (and takes JSON, which the stream's events are)."""
    if envelope.method != "tools/call" or envelope.progress_token is None:
        return False
    accepted = _accepted(scope)
    return (EVENT_STREAM in accepted or "text/*" in accepted) and bool(accepted & JSON_TYPES)
