"""The console's session cookie, its CSRF tokens and the headers every console response carries.

A session is a signed, expiring cookie holding the *fingerprint* of the API key that signed in (what the
store keeps of a key), never the key: the caller is looked up again on every request, so revoking the key
ends its sessions. Forms that write carry a token derived from a second cookie's random nonce (the
double-submit pattern, signed): a page of another site can neither read the nonce nor forge the token, and
SameSite=Strict keeps both cookies off its requests anyway.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from convener.auth.http import is_loopback

SESSION_COOKIE = "convener_session"
CSRF_COOKIE = "convener_csrf"
SESSION_SECONDS = 8 * 3600
"""How long a sign-in lasts: a working day, then the key is asked for again."""
CSRF_FIELD = "csrf_token"

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src 'self' data:; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
"""No inline script or style anywhere, so recorded content can never run even if it reached the markup;
images and audio a conversation recorded are shown from data: URIs."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass(frozen=True)
class Session:
    fingerprint: str
    """SHA-256 of the API key that signed in."""
    expires: int
    """Unix seconds."""


class Signer:
    """Signs and checks the console's cookies with a key derived from the installation's secret."""

    def __init__(self, installation_secret: bytes) -> None:
        self._session_key = hmac.new(installation_secret, b"console-session", hashlib.sha256).digest()
        self._csrf_key = hmac.new(installation_secret, b"console-csrf", hashlib.sha256).digest()

    def session_cookie(self, fingerprint: str, now: float | None = None) -> str:
        expires = int(now if now is not None else time.time()) + SESSION_SECONDS
        body = _b64(json.dumps({"k": fingerprint, "e": expires}, separators=(",", ":")).encode())
        return f"{body}.{_b64(hmac.new(self._session_key, body.encode(), hashlib.sha256).digest())}"

    def session(self, cookie: str | None, now: float | None = None) -> Session | None:
        """The session a cookie holds, or None when it is missing, forged or expired."""
        if not cookie or len(cookie) > 512 or cookie.count(".") != 1:
            return None
        body, signature = cookie.split(".")
        expected = _b64(hmac.new(self._session_key, body.encode(), hashlib.sha256).digest())
        if not hmac.compare_digest(signature, expected):
            return None
        try:
            content = json.loads(_unb64(body))
            session = Session(str(content["k"]), int(content["e"]))
        except (ValueError, KeyError, TypeError):
            return None
        return session if session.expires > (now if now is not None else time.time()) else None

    def csrf_token(self, nonce: str) -> str:
        return hmac.new(self._csrf_key, nonce.encode(), hashlib.sha256).hexdigest()

    def csrf_valid(self, nonce: str | None, token: str | None) -> bool:
        return bool(nonce) and bool(token) and hmac.compare_digest(self.csrf_token(nonce or ""), token or "")


def new_nonce() -> str:
    return secrets.token_urlsafe(24)


LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]", "::1"})


def host_name(host_header: str) -> str:
    """``127.0.0.1:8080`` → ``127.0.0.1``; ``[::1]:8080`` → ``[::1]``."""
    if host_header.startswith("["):
        return host_header.split("]")[0] + "]"
    return host_header.rsplit(":", 1)[0] if host_header.count(":") == 1 else host_header


class ConsoleHeaders:
    """Every console response: the CSP and its companions; and, on a loopback server, a refusal of any Host
    but a loopback one, so a page that rebinds its DNS name to 127.0.0.1 cannot read the console (the MCP
    endpoints check the same, in the SDK)."""

    def __init__(self, app: ASGIApp, *, server_host: str) -> None:
        self.app = app
        self.check_host = is_loopback(server_host)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.check_host and host_name(Headers(scope=scope).get("host", "")) not in LOOPBACK_HOSTS:
            await _plain(send, 421, b"Misdirected request: this server answers to loopback host names only")
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers["content-security-policy"] = CONTENT_SECURITY_POLICY
                headers["x-content-type-options"] = "nosniff"
                headers["referrer-policy"] = "same-origin"  # "no-referrer" makes forms send Origin: null
                headers["x-frame-options"] = "DENY"
                headers["cross-origin-opener-policy"] = "same-origin"
                if "cache-control" not in headers:
                    headers["cache-control"] = "no-store"
            await send(message)

        await self.app(scope, receive, with_headers)


async def _plain(send: Send, status: int, text: bytes) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(text)).encode()),
                            (b"content-security-policy", CONTENT_SECURITY_POLICY.encode())]})
    await send({"type": "http.response.body", "body": text})
