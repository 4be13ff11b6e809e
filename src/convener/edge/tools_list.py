"""``tools/list`` answered from memory after its first answer.

The tools are fixed when the server starts and listed alike to every caller of a selection of toolsets
(tooling's ``list_tools`` looks at the selection, not at the caller), yet the SDK serialises the list anew for
each request: when every tool was listed, 1.3 MB of schemas and a few hundred milliseconds of CPU on the event
loop, during which no other request moved (measured with four readers, that alone put every request's p99
over two seconds). The first answer of each endpoint, per selection and protocol version, is kept as bytes;
later requests get it with their own id.

Only a request the SDK would answer the same way is answered from memory: one that passes the SDK's own
DNS-rebinding check, accepts JSON, sends JSON, asks for the first page and names a known protocol version (or
none). Anything else goes to the SDK, which answers or refuses it as before.
"""

from __future__ import annotations

import json

from mcp.server.streamable_http import CONTENT_TYPE_JSON, check_accept_headers
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from convener.edge.wire import Envelope
from convener.toolsets import Selection


class ToolsListCache:
    """The serialised ``tools/list`` result of one endpoint, per selection of tools and protocol version."""

    def __init__(self, security: TransportSecuritySettings | None) -> None:
        self._security = TransportSecurityMiddleware(security)
        self._results: dict[tuple[Selection, str], bytes] = {}

    async def _answerable(self, request: Request, envelope: Envelope, version: str) -> bool:
        return (envelope.request_id is not None and "cursor" not in envelope.params
                and (not version or version in HANDSHAKE_PROTOCOL_VERSIONS)
                and check_accept_headers(request)[0]
                and request.headers.get("content-type", "").split(";")[0].strip() == CONTENT_TYPE_JSON
                and await self._security.validate_request(request, is_post=True) is None)

    async def serve(self, scope: Scope, receive: Receive, send: Send, envelope: Envelope, app: ASGIApp,
                    selection: Selection) -> None:
        request = Request(scope)
        version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER, "")
        if not await self._answerable(request, envelope, version):
            await app(scope, receive, send)
            return
        key = (selection, version)
        kept = self._results.get(key)
        if kept is not None:
            body = b'{"jsonrpc":"2.0","id":%s,"result":%s}' % (json.dumps(envelope.request_id).encode(), kept)
            await send({"type": "http.response.start", "status": 200, "headers": [
                (b"content-type", CONTENT_TYPE_JSON.encode()), (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        status = 0
        chunks: list[bytes] = []

        async def keeping(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
            await send(message)

        await app(scope, receive, keeping)
        if status == 200:
            self._keep(key, b"".join(chunks))

    def _keep(self, key: tuple[Selection, str], body: bytes) -> None:
        try:
            answer = json.loads(body)
        except ValueError:
            return
        result = answer.get("result") if isinstance(answer, dict) else None
        if isinstance(result, dict) and isinstance(result.get("tools"), list) and not result.get("nextCursor"):
            self._results[key] = json.dumps(result, ensure_ascii=False, separators=(",", ":")).encode()
