"""The console's pages. Each resolves its viewer, calls tools through ``ConsoleTools`` and renders a template;
an ApiError becomes the page's inline error (a filter's, beside the filter box) or an error page with the
HTTP status Google's mapping gives its code."""

from __future__ import annotations

import html
import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode

from jinja2 import Environment
from pydantic import ConfigDict, ValidationError
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from convener.api.errors import ApiError, Code, InvalidArgument, describe_validation
from convener.api.names import LocationName
from convener.api.protojson import ProtoModel, Timestamp
from convener.auth.keys import ApiKeys, key_fingerprint
from convener.ces.models import App, Conversation, InputType, Source
from convener.ces.requests import ListAppsResponse, ListConversationsResponse
from convener.console.access import Callers, ConsoleTools, Resp, Viewer
from convener.console.present import WATERFALL_WIDTH, TurnPage, turn_count, turn_views
from convener.console.security import (
    CSRF_COOKIE,
    CSRF_FIELD,
    SESSION_COOKIE,
    SESSION_SECONDS,
    Signer,
    new_nonce,
)
from convener.edge.errors import HTTP_STATUS
from convener.outside.limits import CONSOLE_FORM_BYTES

logger = logging.getLogger(__name__)

LISTED_SOURCES = tuple(source.value for source in Source if source is not Source.SOURCE_UNSPECIFIED)
_POSITION = re.compile(r"at position (\d+)")


class ConversationRow(ProtoModel):
    """What a row of the conversations list shows of a stored conversation (the rest of its body is ignored)."""

    model_config = ConfigDict(extra="ignore")

    name: str | None = None
    start_time: Timestamp | None = None
    end_time: Timestamp | None = None
    turn_count: int | None = None
    source: Source | None = None
    input_types: list[InputType] | None = None
    entry_agent: str | None = None
    app_version: str | None = None

    @property
    def id(self) -> str:
        return (self.name or "").rsplit("/", 1)[-1]


class FormTooLarge(Exception):
    pass


@dataclass
class Console:
    """What every view needs: the templates, the tools, who is calling, and the cookie signer."""

    templates: Environment
    tools: ConsoleTools
    callers: Callers
    keys: ApiKeys
    signer: Signer
    secure_cookies: bool

    # --- rendering ---------------------------------------------------------------------------------------------

    def render(self, request: Request, template: str, viewer: Viewer | None, status: int = 200,
               **context: Any) -> HTMLResponse:
        nonce = request.cookies.get(CSRF_COOKIE) or ""
        fresh = not nonce or len(nonce) > 64
        if fresh:
            nonce = new_nonce()
        html = self.templates.get_template(template).render(
            viewer=viewer, csrf_field=CSRF_FIELD, csrf_token=self.signer.csrf_token(nonce),
            may=(lambda tool: viewer is not None and self.tools.may_call(tool, viewer.caller)),
            path=request.url.path, **context)
        response = HTMLResponse(html, status_code=status)
        if fresh:
            self._cookie(response, CSRF_COOKIE, nonce, max_age=None)
        return response

    def _cookie(self, response: Response, name: str, value: str, max_age: int | None) -> None:
        response.set_cookie(name, value, max_age=max_age, path="/", httponly=True, samesite="strict",
                            secure=self.secure_cookies)

    def error_page(self, request: Request, viewer: Viewer | None, code: Code, message: str) -> HTMLResponse:
        return self.render(request, "error.html", viewer, status=HTTP_STATUS[code], code=code.name, message=message)

    # --- plumbing every page shares ------------------------------------------------------------------------------

    def page(self, render: Callable[[Request, Viewer], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
        """A page that needs a viewer: none sends the browser to sign in, and back here after."""

        async def endpoint(request: Request) -> Response:
            viewer = await self.callers.viewer(request)
            if viewer is None:
                return RedirectResponse(f"/console/sign-in?{urlencode({'next': request.url.path})}", status_code=303)
            try:
                return await render(request, viewer)
            except ApiError as error:
                return self.error_page(request, viewer, error.code, error.message)
            except ValidationError as error:
                return self.error_page(request, viewer, Code.INVALID_ARGUMENT, describe_validation(error))

        return endpoint

    async def call_for_form(self, name: str, arguments: dict[str, Any], viewer: Viewer, response: type[Resp],
                            shown: tuple[Code, ...] = (Code.INVALID_ARGUMENT,)) -> tuple[Resp | None, str]:
        """A tool's answer to what a page's form asked, or no answer and the problem to show beside the form:
        an error of a kind in ``shown`` (one the caller fixes by changing the form) or arguments the tool's
        request model refused. Any other error is the page's error."""
        try:
            return await self.tools.call(name, arguments, viewer.caller, response), ""
        except ApiError as error:
            if error.code not in shown:
                raise
            return None, f"{error.code.name}: {error.message}"
        except ValidationError as error:
            return None, f"INVALID_ARGUMENT: {describe_validation(error)}"

    async def _form(self, request: Request) -> dict[str, str]:
        """A urlencoded form, read up to its limit (HTTP 413 past it)."""
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > CONSOLE_FORM_BYTES:
            raise FormTooLarge
        body = bytearray()
        async for chunk in request.stream():
            body.extend(chunk)
            if len(body) > CONSOLE_FORM_BYTES:
                raise FormTooLarge
        fields = parse_qs(body.decode("utf-8", errors="replace"), keep_blank_values=True, max_num_fields=20)
        return {name: values[0] for name, values in fields.items()}

    async def checked_form(self, request: Request) -> dict[str, str] | Response:
        """The form of a POST that writes, or the response refusing it: too large, another site's, or without a
        valid CSRF token."""
        origin = request.headers.get("origin")
        if origin is not None and origin != f"{request.url.scheme}://{request.url.netloc}":
            return self.error_page(request, None, Code.PERMISSION_DENIED, "this form was sent from another site")
        try:
            form = await self._form(request)
        except FormTooLarge:
            return self.error_page(request, None, Code.RESOURCE_EXHAUSTED,
                                   f"the form is larger than {CONSOLE_FORM_BYTES} bytes (http.console.form)")
        except ValueError:
            return self.error_page(request, None, Code.INVALID_ARGUMENT, "the form has too many fields")
        if not self.signer.csrf_valid(request.cookies.get(CSRF_COOKIE), form.get(CSRF_FIELD)):
            return self.error_page(request, None, Code.PERMISSION_DENIED,
                                   "the form's security token is missing or stale; reload the page and send it again")
        return form

    # --- signing in and out ------------------------------------------------------------------------------------

    async def sign_in(self, request: Request) -> Response:
        next_path = _safe_next(request.query_params.get("next"))
        viewer = await self.callers.viewer(request)
        if request.method == "GET":
            return self.render(request, "sign_in.html", viewer, next_path=next_path, problem="")
        form = await self.checked_form(request)
        if isinstance(form, Response):
            return form
        next_path = _safe_next(form.get("next"))
        fingerprint = key_fingerprint(form.get("key", "").strip())
        caller = None if fingerprint is None else self.keys.caller_of_fingerprint(fingerprint)
        if fingerprint is None or caller is None:
            return self.render(request, "sign_in.html", viewer, status=401, next_path=next_path,
                               problem="UNAUTHENTICATED: that is not a valid API key of this server")
        response = RedirectResponse(next_path, status_code=303)
        self._cookie(response, SESSION_COOKIE, self.signer.session_cookie(fingerprint), max_age=SESSION_SECONDS)
        self._cookie(response, CSRF_COOKIE, new_nonce(), max_age=None)  # a new session, a new token
        return response

    async def sign_out(self, request: Request) -> Response:
        form = await self.checked_form(request)
        if isinstance(form, Response):
            return form
        response = RedirectResponse("/console/sign-in", status_code=303)
        response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict", secure=self.secure_cookies)
        return response

    # --- pages -------------------------------------------------------------------------------------------------

    async def home(self, request: Request, viewer: Viewer) -> Response:
        return self.render(request, "home.html", viewer)

    async def go(self, request: Request, viewer: Viewer) -> Response:
        """The home page's location box: to that location's apps, once it reads as a location's name."""
        location = LocationName.parse(request.query_params.get("location", "").strip().strip("/"), "location")
        return RedirectResponse(f"/console/{location}/apps", status_code=303)

    async def apps(self, request: Request, viewer: Viewer) -> Response:
        parent = location_of(request)
        arguments: dict[str, Any] = {"parent": parent}
        if token := request.query_params.get("pageToken"):
            arguments["pageToken"] = token
        listed = await self.tools.call("list_apps", arguments, viewer.caller, ListAppsResponse)
        return self.render(request, "apps.html", viewer, parent=parent, apps=listed.apps or [],
                           next_page=page_link(request, listed.next_page_token))

    async def app(self, request: Request, viewer: Viewer) -> Response:
        name = f"{location_of(request)}/apps/{request.path_params['app']}"
        app = await self.tools.call("get_app", {"name": name}, viewer.caller, App)
        return self.render(request, "app.html", viewer, app=app, name=name)

    async def conversations(self, request: Request, viewer: Viewer) -> Response:
        parent = f"{location_of(request)}/apps/{request.path_params['app']}"
        query = request.query_params
        filter_text = query.get("filter", "")
        sources = [source for source in query.getlist("sources") if source in LISTED_SOURCES]
        arguments: dict[str, Any] = {"parent": parent}
        if filter_text:
            arguments["filter"] = filter_text
        if sources:
            arguments["sources"] = sources
        with_paging(request, arguments)
        app = await self.tools.call("get_app", {"name": parent}, viewer.caller, App)
        problem, position = "", -1
        rows: list[ConversationRow] = []
        next_page = ""
        try:
            listed = await self.tools.call("list_conversations", arguments, viewer.caller, ListConversationsResponse)
        except ApiError as error:
            if error.code is not Code.INVALID_ARGUMENT:
                raise
            problem = f"{error.code.name}: {error.message}"
            found = _POSITION.search(error.message)
            position = int(found.group(1)) if found and "filter" in error.message else -1
        else:
            rows = [ConversationRow.model_validate_json(body.text) for body in listed.conversations or []]
            next_page = page_link(request, listed.next_page_token)
        return self.render(request, "conversations.html", viewer, status=400 if problem else 200, app=app,
                           parent=parent, rows=rows, filter_text=filter_text, sources=sources,
                           all_sources=LISTED_SOURCES, problem=problem, position=position, next_page=next_page,
                           first_page=page_link(request, "") if query.get("pageToken") else "")

    async def conversation(self, request: Request, viewer: Viewer) -> Response:
        app_name = f"{location_of(request)}/apps/{request.path_params['app']}"
        name = f"{app_name}/conversations/{request.path_params['conversation']}"
        started = time.perf_counter()
        conversation = await self.tools.call("get_conversation", {"name": name}, viewer.caller, Conversation)
        count = turn_count(conversation)
        shown = TurnPage.holding(_turn_asked(request.query_params.get("turn"), count), count)
        response = self.render(request, "conversation.html", viewer, conversation=conversation, name=name,
                               app_name=app_name, turns=turn_views(conversation, shown.first, shown.last),
                               shown=shown, bar_width=WATERFALL_WIDTH)
        response.headers["server-timing"] = f"render;dur={(time.perf_counter() - started) * 1000:.1f}"
        return response


def _turn_asked(text: str | None, count: int) -> int:
    """The turn a conversation's page is asked to show (``?turn=N``: the page holding it), 1 when not asked."""
    if text is None:
        return 1
    if not text.isdigit() or len(text) > 9 or not 1 <= int(text) <= max(count, 1):
        turns = f"its turns are 1 to {count}" if count else "it has no turns"
        raise InvalidArgument(f"turn: {text[:20]!r} is not a turn of this conversation ({turns})")
    return int(text)


STEPS_MARK = "<!--steps-->"
"""Where a streamed page's head ends: its steps follow, then the rest of the page once the work is done."""


async def streamed_steps(head: Response, first: str | Resp, events: AsyncIterator[str | Resp],
                         finish: Callable[[Resp | None, str], Awaitable[Response]]) -> AsyncIterator[str]:
    """A page streamed around a tool's work, as ``ConsoleTools.call_reporting`` yields it: ``head`` up to its
    mark, a line for each step the moment the tool reports it, then the page ``finish`` renders from the answer
    (or from None and the problem that stopped the work) from its mark on. One HTML response, so the browser
    draws each step as it comes with no script."""
    yield bytes(head.body).decode().split(STEPS_MARK, 1)[0]
    yield '<ol class="steps" aria-label="What happened, as it happened">'
    event = first
    problem = ""
    try:
        while isinstance(event, str):
            yield f'<li class="step small muted">{html.escape(event)}</li>'
            event = await anext(events)
    except ApiError as error:
        problem = f"{error.code.name}: {error.message}"
    except Exception:  # the status has left already: the page says so, the log has the rest
        logger.exception("a streamed page's work failed")
        problem = "INTERNAL: the work failed after it started; the server's log says why"
    yield "</ol>"
    rest = await finish(None if isinstance(event, str) else event, problem)
    yield bytes(rest.body).decode().split(STEPS_MARK, 1)[1]


def location_of(request: Request) -> str:
    return f"projects/{request.path_params['project']}/locations/{request.path_params['location']}"


def with_paging(request: Request, arguments: dict[str, Any]) -> dict[str, Any]:
    """A list tool's ``arguments`` with the page's ``pageToken`` and ``pageSize`` from its query, as given: a
    size that is not a number reaches the tool as text, and the tool says what is wrong with it."""
    query = request.query_params
    if token := query.get("pageToken"):
        arguments["pageToken"] = token
    if size := query.get("pageSize"):
        arguments["pageSize"] = int(size) if size.isdigit() and len(size) < 10 else size
    return arguments


def page_link(request: Request, token: str | None) -> str:
    """This page's URL at page ``token`` (the first page when empty); no link when the token is None."""
    if token is None:
        return ""
    kept = [(key, value) for key, value in request.query_params.multi_items() if key != "pageToken"]
    if token:
        kept.append(("pageToken", token))
    return f"{request.url.path}?{urlencode(kept)}" if kept else request.url.path


def _safe_next(path: str | None) -> str:
    """Where to go after signing in: a console path of this server, never another site."""
    if path and path.startswith("/console/") and not path.startswith("//") and "\\" not in path and len(path) < 2000:
        return path
    return "/console/"
