"""The console's knowledge pages: the ingested data sources (``list_data_sources``), a data source with its
documents as ``search_documents`` finds them there, the search across every source, a document
(``get_documents``, its Markdown rendered by ``markup.markdown_html``), and the ask page (``answer_query``
with citations: the answer, its references linking to their documents, and each cited sentence's
supporting passages cut from the documents' content).

URLs mirror the names: ``/console/dataSources``, ``/console/dataSources/{name}``, ``/console/documents``
(the collection, searched), ``/console/documents/{uri_without_scheme}``, and ``/console/answer``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import Response

from convener.api.errors import NotFound
from convener.console.access import Viewer
from convener.console.markup import markdown_html
from convener.console.operations import OperationView, operation_view
from convener.console.views import Console, page_link, with_paging
from convener.knowledge.models import (
    AnswerQueryResponse,
    DataSource,
    Document,
    DocumentChunk,
    GetDocumentsResponse,
    IngestProblem,
    IngestSummary,
    ListDataSourcesResponse,
    SearchDocumentsResponse,
)
from convener.knowledge.operations import LOCATION as INGESTS
from convener.longrunning.models import ListOperationsResponse, Operation

MAX_REFERENCES = 20
"""get_documents' limit: the ask page reads at most this many cited documents for their passages."""
INGESTS_READ = 50
"""Operations read for a data source's page, newest first, to find its ingests among them."""
PROBLEMS_SHOWN = 20
"""An ingest's problems listed on the page (its operation's page has them all)."""


@dataclass(frozen=True)
class IngestView:
    """An ingest into a data source: its operation's state and progress, and the files it could not read."""

    operation: OperationView
    problems: list[IngestProblem]
    more_problems: int


def ingest_view(operation: Operation) -> IngestView:
    progress = (operation.metadata or {}).get("progress")
    summary = IngestSummary.model_validate(progress) if isinstance(progress, dict) else IngestSummary()
    problems = summary.problems or []
    return IngestView(operation_view(operation), problems[:PROBLEMS_SHOWN], max(len(problems) - PROBLEMS_SHOWN, 0))


@dataclass(frozen=True)
class ChunkView:
    document: str
    title: str
    uri: str
    data_source: str
    score: float | None
    html: Markup


@dataclass(frozen=True)
class Passage:
    document: str
    title: str
    text: str


@dataclass(frozen=True)
class CitedSentence:
    sentence: str
    passages: list[Passage]


def chunk_view(chunk: DocumentChunk) -> ChunkView:
    document = chunk.document or Document()
    return ChunkView(document=chunk.parent or document.name or "", title=document.title or chunk.parent or "",
                     uri=document.uri or "", data_source=document.data_source or "",
                     score=chunk.relevance_score, html=markdown_html(chunk.content))


def _cut(text: str, start: int | None, end: int | None) -> str:
    """``text``'s UTF-8 bytes ``start:end`` (the tools' citations count bytes)."""
    data = text.encode("utf-8")
    return data[start or 0:end if end is not None else len(data)].decode("utf-8", errors="replace").strip()


def cited_sentences(answer: AnswerQueryResponse, documents: dict[str, Document]) -> list[CitedSentence]:
    cited = []
    for citation in answer.citations or []:
        passages = []
        for source in citation.sources or []:
            document = documents.get(source.document or "")
            if document is None or document.content is None:
                continue
            passages.append(Passage(document=source.document or "", title=document.title or source.document or "",
                                    text=_cut(document.content, source.start_byte, source.end_byte)))
        cited.append(CitedSentence(sentence=_cut(answer.answer_text or "", citation.start_byte, citation.end_byte),
                                   passages=passages))
    return cited


class KnowledgePages:
    def __init__(self, console: Console) -> None:
        self.console = console

    async def _data_sources(self, viewer: Viewer) -> list[DataSource]:
        listed = await self.console.tools.call("list_data_sources", {}, viewer.caller, ListDataSourcesResponse)
        return listed.data_sources or []

    async def data_sources(self, request: Request, viewer: Viewer) -> Response:
        return self.console.render(request, "knowledge_sources.html", viewer,
                                   data_sources=await self._data_sources(viewer))

    async def data_source(self, request: Request, viewer: Viewer) -> Response:
        name = request.path_params["name"]
        source = next((found for found in await self._data_sources(viewer) if found.name == name), None)
        if source is None:
            raise NotFound(f"there is no data source {name}")
        return await self._search(request, viewer, source, await self._ingests(viewer, name))

    async def _ingests(self, viewer: Viewer, source: str) -> list[IngestView]:
        """The caller's ingests into ``source`` among their newest ``INGESTS_READ`` operations (the operations
        tool filters on ``done`` alone, so this reads one bounded page and picks; the operations page has all)."""
        if not self.console.tools.may_call("list_operations", viewer.caller):
            return []
        listed = await self.console.tools.call("list_operations", {"name": str(INGESTS), "pageSize": INGESTS_READ},
                                               viewer.caller, ListOperationsResponse)
        return [ingest_view(operation) for operation in listed.operations or []
                if (operation.metadata or {}).get("dataSource") == source]

    async def search(self, request: Request, viewer: Viewer) -> Response:
        return await self._search(request, viewer, None)

    async def _search(self, request: Request, viewer: Viewer, source: DataSource | None,
                      ingests: list[IngestView] | None = None) -> Response:
        query = request.query_params
        text = query.get("query", "").strip()
        filter_text = query.get("filter", "").strip()
        arguments: dict[str, Any] = {"query": text}
        if source is not None:
            scoped = f"data_source = {_quoted(source.name or '')}"
            arguments["filter"] = f"{scoped} AND ({filter_text})" if filter_text else scoped
        elif filter_text:
            arguments["filter"] = filter_text
        with_paging(request, arguments)
        size, token = query.get("pageSize", ""), query.get("pageToken", "")
        chunks: list[ChunkView] = []
        problem, next_page = "", ""
        if text or filter_text or size or token:
            found, problem = await self.console.call_for_form("search_documents", arguments, viewer,
                                                              SearchDocumentsResponse)
            if found is not None:
                chunks = [chunk_view(chunk) for chunk in found.results or []]
                next_page = page_link(request, found.next_page_token)
        documents = list(dict.fromkeys((chunk.document, chunk.title) for chunk in chunks))
        return self.console.render(
            request, "knowledge_search.html", viewer, status=400 if problem else 200, source=source,
            query_text=text, filter_text=filter_text, page_size=size or "", asked=bool(text), chunks=chunks,
            documents=documents, problem=problem, next_page=next_page, ingests=ingests or [],
            operations=f"/console/{INGESTS}/operations", first_page=page_link(request, "") if token else "")

    async def document(self, request: Request, viewer: Viewer) -> Response:
        name = f"documents/{request.path_params['path']}"
        got = await self.console.tools.call("get_documents", {"names": [name]}, viewer.caller, GetDocumentsResponse)
        if not got.documents:
            raise NotFound(f"there is no document {name}")
        document = got.documents[0]
        return self.console.render(request, "knowledge_document.html", viewer, name=name, document=document,
                                   html=markdown_html(document.content))

    async def answer(self, request: Request, viewer: Viewer) -> Response:
        text = request.query_params.get("query", "").strip()
        answer: AnswerQueryResponse | None = None
        references: list[Document] = []
        cited: list[CitedSentence] = []
        problem = ""
        if "query" in request.query_params:
            answer, problem = await self.console.call_for_form(
                "answer_query", {"query": text, "includeCitations": True}, viewer, AnswerQueryResponse)
        if answer is not None and answer.references:
            names = list(dict.fromkeys(answer.references))[:MAX_REFERENCES]
            got = await self.console.tools.call("get_documents", {"names": names}, viewer.caller,
                                                GetDocumentsResponse)
            references = [document for document in got.documents or [] if document.name]
            cited = cited_sentences(answer, {document.name or "": document for document in references})
        return self.console.render(
            request, "knowledge_answer.html", viewer, status=400 if problem else 200, query_text=text,
            answer=answer, answer_html=markdown_html(answer.answer_text) if answer else "",
            references=references, cited=cited, problem=problem)


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
