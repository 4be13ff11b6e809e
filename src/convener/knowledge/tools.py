"""MCP tools of the knowledge service (developerknowledge.googleapis.com), and Convener's administration of
the corpus, which needs the ``knowledge.admin`` scope."""

from __future__ import annotations

from pathlib import Path

from convener.auth.caller import Caller
from convener.knowledge.ingest import IngestPlan
from convener.knowledge.models import (
    AnswerQueryRequest,
    AnswerQueryResponse,
    DeleteDocumentsRequest,
    DeleteDocumentsResponse,
    GetDocumentsRequest,
    GetDocumentsResponse,
    IngestDocumentsRequest,
    IngestSummary,
    ListDataSourcesRequest,
    ListDataSourcesResponse,
    SearchDocumentsRequest,
    SearchDocumentsResponse,
)
from convener.knowledge.operations import Ingests
from convener.knowledge.service import KnowledgeService
from convener.longrunning.models import Operation
from convener.progress import Report
from convener.tooling import CREATES, DELETES, READ_ONLY, ToolRegistry, ToolSpec

ADMIN = ("knowledge.admin",)


def knowledge_tools(knowledge: KnowledgeService, ingests: Ingests) -> ToolRegistry:
    registry = ToolRegistry("knowledge")
    everyday = registry.group("knowledge")
    admin = registry.group("admin")

    def search(request: SearchDocumentsRequest, caller: Caller) -> SearchDocumentsResponse:
        page = knowledge.search(request.query, request.page_size, request.page_token, request.filter, caller)
        return SearchDocumentsResponse(results=page.results, next_page_token=page.next_page_token)

    def get(request: GetDocumentsRequest, caller: Caller) -> GetDocumentsResponse:
        return GetDocumentsResponse(documents=knowledge.get_documents(request.names))

    def answer(request: AnswerQueryRequest, caller: Caller) -> AnswerQueryResponse:
        result = knowledge.answer(request.query)
        return AnswerQueryResponse(answer_text=result.text, references=result.references,
                                   citations=result.citations if request.include_citations else None)

    def ingest(request: IngestDocumentsRequest, caller: Caller, report: Report | None = None) -> Operation:
        location = knowledge.check_readable(Path(request.path))
        plan = IngestPlan.make(location, request.base_url, request.data_source, bool(request.keep_removed))

        def progress(summary: IngestSummary) -> None:
            if report is not None:
                report(float(summary.files_seen or 0), None, f"{summary.files_seen} files read, "
                       f"{(summary.added or 0) + (summary.updated or 0)} indexed, {summary.unchanged} unchanged")

        return ingests.ingest(plan, caller, progress)

    everyday.add(ToolSpec(
        "search_documents", "Search documents",
        "Searches the indexed documentation for chunks relevant to a query, most relevant first, each with its "
        "document's metadata (name, uri, title, dataSource). Use get_documents with a chunk's parent to read the "
        "whole document. Ranking is BM25 full-text search, fused with semantic search when the server has "
        "local embeddings.",
        SearchDocumentsRequest, SearchDocumentsResponse, READ_ONLY, search,
    ))
    everyday.add(ToolSpec(
        "get_documents", "Get documents",
        "Gets up to 20 documents by name (documents/{uri_without_scheme}, as in search results' parent), with "
        "their full Markdown content, in the order asked.",
        GetDocumentsRequest, GetDocumentsResponse, READ_ONLY, get,
    ))
    everyday.add(ToolSpec(
        "answer_query", "Answer query",
        "Answers a question from the indexed documentation, grounded in it: returns the answer and the names of "
        "the documents used (references). Without a configured model the answer is extractive, made of "
        "sentences quoted verbatim from those documents, and says so; when nothing supports an answer it says "
        "that it was not found. Use get_documents on the references to read more, or search_documents.",
        AnswerQueryRequest, AnswerQueryResponse, READ_ONLY, answer,
    ))
    everyday.add(ToolSpec(
        "list_data_sources", "List data sources",
        "Lists the ingested data sources with their base URL, document count and embedding model.",
        ListDataSourcesRequest, ListDataSourcesResponse, READ_ONLY,
        lambda request, caller: ListDataSourcesResponse(data_sources=knowledge.list_data_sources()),
    ))
    admin.add(ToolSpec(
        "delete_documents", "Delete documents",
        "Deletes documents by name, or a whole data source with its documents. Needs the knowledge.admin scope.",
        DeleteDocumentsRequest, DeleteDocumentsResponse, DELETES,
        lambda request, caller: DeleteDocumentsResponse(
            deleted_count=knowledge.delete_documents(request.names, request.data_source)),
        scopes=ADMIN,
    ))
    admin.add(ToolSpec(
        "ingest_documents", "Ingest documents",
        "Indexes a folder, zip or tar archive, or file of Markdown, HTML, reStructuredText or text on the server "
        "(inside CONVENER_KNOWLEDGE_ROOTS) as a long-running operation, incrementally: unchanged files are "
        "skipped, changed ones re-indexed, removed ones deleted unless keepRemoved. Returns the finished "
        "operation, whose response lists files that could not be read. Sends MCP progress notifications when "
        "the call carries a progressToken. Needs the knowledge.admin scope.",
        IngestDocumentsRequest, Operation, CREATES, ingest, progress_handler=ingest, scopes=ADMIN,
    ))
    return registry
