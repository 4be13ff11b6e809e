"""The console's routes, mounted at ``/console`` by ``server.build_app``, and the page at ``/`` that links to it.

URLs mirror resource names: a resource at ``/console/`` + its name, a collection at ``/console/`` + its parent +
``/apps`` or ``/conversations``.
"""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from convener import __version__
from convener.api.errors import Code
from convener.auth.keys import ApiKeys
from convener.console.access import Callers, ConsoleTools
from convener.console.agents import AGENTS, DEPLOYMENTS, GUARDRAILS, TOOLS, TOOLSETS, VERSIONS, AgentPages
from convener.console.analytics import AnalyticsPages
from convener.console.evaluations import EvaluationPages
from convener.console.chat import ChatPages
from convener.console.knowledge import KnowledgePages
from convener.console.operations import OperationPages
from convener.console.playground import PlaygroundPages
from convener.console.present import pretty, when
from convener.console.security import ConsoleHeaders, Signer
from convener.console.views import Console
from convener.services import Services

HERE = Path(__file__).parent
LOCATION = "/projects/{project}/locations/{location}"
APP = LOCATION + "/apps/{app}"
DATA_AGENT = LOCATION + "/dataAgents/{agent}"


def templates() -> Environment:
    # Autoescaped everywhere, .html or not: whatever a caller recorded reaches the page as text.
    environment = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(default=True),
                              trim_blocks=True, lstrip_blocks=True)
    environment.filters["pretty"] = pretty
    environment.filters["when"] = when
    environment.globals["version"] = __version__
    return environment


def console_routes(services: Services) -> list[BaseRoute]:
    """``/`` and ``/console/…``, each response with the console's headers."""
    settings = services.settings
    keys = ApiKeys(services.database)
    # Its own secret, not the page tokens': a key that signs sessions signs nothing else.
    signer = Signer(services.database.installation_secret("console_secret"))
    console = Console(
        templates=templates(),
        tools=ConsoleTools(services.registries(), read_only=settings.read_only),
        callers=Callers(keys, signer, allow_anonymous=settings.allow_anonymous),
        keys=keys,
        signer=signer,
        # Plain HTTP on loopback is the usual deployment; behind a TLS proxy the browser still gets HttpOnly,
        # SameSite=Strict cookies, and the proxy may add Secure.
        secure_cookies=False,
    )
    evaluations, analytics, parts = EvaluationPages(console), AnalyticsPages(console), AgentPages(console)
    chat, knowledge, operations = ChatPages(console), KnowledgePages(console), OperationPages(console)
    playground = PlaygroundPages(console)

    async def landing(request: Request) -> Response:
        viewer = await console.callers.viewer(request)
        return console.render(request, "landing.html", viewer, services=settings.services)

    async def to_console(request: Request) -> Response:
        return RedirectResponse("/console/", status_code=308)

    async def not_found(request: Request) -> Response:
        viewer = await console.callers.viewer(request)
        return console.error_page(request, viewer, Code.NOT_FOUND, f"there is no console page at {request.url.path}")

    headers = [Middleware(ConsoleHeaders, server_host=settings.host)]
    pages = [
        Route("/", console.page(console.home)),
        Route("/go", console.page(console.go)),
        Route("/sign-in", console.sign_in, methods=["GET", "POST"]),
        Route("/sign-out", console.sign_out, methods=["POST"]),
        Mount("/static", app=StaticFiles(directory=HERE / "static"), name="static"),
        Route(LOCATION + "/apps", console.page(console.apps)),
        Route(APP, console.page(console.app)),
        Route(APP + "/conversations", console.page(console.conversations)),
        Route(APP + "/conversations/{conversation}:generateEvaluation", console.page(evaluations.generate),
              methods=["POST"]),
        Route(APP + "/conversations/{conversation}", console.page(console.conversation)),
        Route(APP + "/evaluations", console.page(evaluations.evaluations)),
        Route(APP + "/evaluations/{evaluation}", console.page(evaluations.evaluation)),
        Route(APP + "/evaluations/{evaluation}/results/{result}", console.page(evaluations.result)),
        Route(APP + "/evaluationRuns", console.page(evaluations.runs), methods=["GET", "POST"]),
        Route(APP + "/evaluationRuns/{run}", console.page(evaluations.run)),
        Route(APP + "/evaluationRuns/{run}/compare", console.page(evaluations.comparison)),
        Route(APP + "/agents", console.page(parts.collection(AGENTS))),
        Route(APP + "/agents/{agent}", console.page(parts.agent)),
        Route(APP + "/tools", console.page(parts.collection(TOOLS))),
        Route(APP + "/tools/{tool}", console.page(parts.tool)),
        Route(APP + "/toolsets", console.page(parts.collection(TOOLSETS))),
        Route(APP + "/toolsets/{toolset}", console.page(parts.toolset)),
        Route(APP + "/guardrails", console.page(parts.collection(GUARDRAILS))),
        Route(APP + "/guardrails/{guardrail}", console.page(parts.guardrail)),
        Route(APP + "/versions", console.page(parts.collection(VERSIONS))),
        Route(APP + "/versions/{version}", console.page(parts.version)),
        Route(APP + "/deployments", console.page(parts.collection(DEPLOYMENTS))),
        Route(APP + "/deployments/{deployment}", console.page(parts.deployment)),
        Route(APP + "/playground", console.page(playground.start)),
        Route(APP + "/playground/{session}", console.page(playground.session), methods=["GET", "POST"]),
        Route(LOCATION + "/dataAgents", console.page(analytics.data_agents)),
        Route(DATA_AGENT, console.page(analytics.data_agent)),
        Route(DATA_AGENT + "/ask", console.page(analytics.ask), methods=["GET", "POST"]),
        Route(LOCATION + "/conversations", console.page(analytics.conversations)),
        Route(LOCATION + "/conversations/{conversation}", console.page(analytics.conversation)),
        Route(LOCATION + "/sqlSources", console.page(analytics.sql_sources)),
        Route(LOCATION + "/sqlSources/{source}", console.page(analytics.sql_source)),
        Route("/spaces", console.page(chat.spaces)),
        Route("/spaces/-/messages", console.page(chat.search)),
        Route("/spaces/{space}", console.page(chat.space)),
        Route("/spaces/{space}/threads/{thread}", console.page(chat.thread)),
        Route("/dataSources", console.page(knowledge.data_sources)),
        Route("/dataSources/{name}", console.page(knowledge.data_source)),
        Route("/documents", console.page(knowledge.search)),
        Route("/documents/{path:path}", console.page(knowledge.document)),
        Route("/answer", console.page(knowledge.answer)),
        Route(LOCATION + "/operations", console.page(operations.operations)),
        Route(LOCATION + "/operations/{operation}:cancel", console.page(operations.cancel), methods=["POST"]),
        Route(LOCATION + "/operations/{operation}", console.page(operations.operation)),
        Route("/{rest:path}", not_found),
    ]
    return [
        Route("/", landing, middleware=headers),
        Route("/console", to_console, middleware=headers),
        Mount("/console", routes=pages, middleware=headers),
    ]
