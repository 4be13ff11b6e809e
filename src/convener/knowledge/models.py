"""Wire models of the knowledge tools: Google's Developer Knowledge shapes (``answer_query`` exactly as its
reference, seed 004; ``Document`` and ``DocumentChunk`` as the v1 REST reference), and Convener's
administration of the corpus (data sources, ingestion, deletion)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import Field

from convener.api.protojson import Int64, ProtoModel, Timestamp
from convener.ces.models import PageSize, PageToken

Query = Annotated[str, Field(description='Required. The question or search terms, such as "How do I create a '
                                         'bucket?"; at most 500 characters.')]


class DocumentView(StrEnum):
    DOCUMENT_VIEW_UNSPECIFIED = "DOCUMENT_VIEW_UNSPECIFIED"
    DOCUMENT_VIEW_BASIC = "DOCUMENT_VIEW_BASIC"
    DOCUMENT_VIEW_FULL = "DOCUMENT_VIEW_FULL"
    DOCUMENT_VIEW_CONTENT = "DOCUMENT_VIEW_CONTENT"


class Document(ProtoModel):
    name: str | None = Field(None, description="Identifier. Format: documents/{uri_without_scheme}, e.g. "
                                               "documents/docs.example.com/guide/install.html")
    uri: str | None = Field(None, description="Output only. The URI of the content.")
    content: str | None = Field(None, description="Output only. The full content of the document in Markdown.")
    description: str | None = Field(None, description="Output only. A description of the document.")
    data_source: str | None = Field(None, description="Output only. The data source of the document, e.g. "
                                                      "docs.example.com.")
    title: str | None = Field(None, description="Output only. The title of the document.")
    update_time: Timestamp | None = Field(
        None, description="Output only. When the content or metadata of the document last changed.")
    view: DocumentView | None = Field(None, description="Output only. Which fields of the document are set.")
    content_length_bytes: Int64 | None = Field(None, description="Output only. The length of content in bytes.")


class DocumentChunk(ProtoModel):
    parent: str | None = Field(None, description="Output only. The name of the document this chunk is from.")
    id: str | None = Field(None, description="Output only. The ID of this chunk within its document (not stable "
                                             "across re-ingests).")
    content: str | None = Field(None, description="Output only. The content of the chunk, in Markdown.")
    document: Document | None = Field(
        None, description="Output only. The document's metadata (DOCUMENT_VIEW_BASIC): use get_documents for "
                          "its content.")
    relevance_score: float | None = Field(
        None, description="Output only. Relevance of the chunk to the query, in [0.0, 1.0]; higher is more relevant.")


class SearchDocumentsRequest(ProtoModel):
    query: Query
    page_size: PageSize = Field(None, description="At most this many chunks (default 5, at most 100).")
    page_token: PageToken = None
    filter: str | None = Field(
        None, description='AIP-160 filter on the chunks\' documents: data_source, uri (STRING, = and !=), '
                          'update_time (TIMESTAMP, RFC 3339 in quotes), content_length_bytes (INTEGER), combined '
                          'with AND, OR, NOT. E.g. data_source = "docs.example.com" AND '
                          'update_time > "2026-01-01T00:00:00Z".')


class SearchDocumentsResponse(ProtoModel):
    results: list[DocumentChunk] | None = Field(None, description="The chunks, most relevant first.")
    next_page_token: str | None = Field(None, description="Token for the next page, as pageToken; empty at the end.")


class GetDocumentsRequest(ProtoModel):
    names: list[str] = Field(description="Required. Up to 20 document names, documents/{uri_without_scheme}.")


class GetDocumentsResponse(ProtoModel):
    documents: list[Document] | None = Field(None, description="The documents, in the order of the request.")


class AnswerQueryRequest(ProtoModel):
    query: Query
    include_citations: bool | None = Field(
        None, description="Convener extension: also return citations, the UTF-8 byte ranges of the answer and of "
                          "the document passages that support each sentence. Off by default.")


class CitationSource(ProtoModel):
    document: str | None = Field(None, description="The name of the cited document.")
    start_byte: int | None = Field(None, description="Start of the supporting passage in the document's content, "
                                                     "in UTF-8 bytes.")
    end_byte: int | None = Field(None, description="End (exclusive) of the supporting passage, in UTF-8 bytes.")


class Citation(ProtoModel):
    start_byte: int | None = Field(None, description="Start of the cited sentence in answerText, in UTF-8 bytes.")
    end_byte: int | None = Field(None, description="End (exclusive) of the cited sentence in answerText.")
    sources: list[CitationSource] | None = Field(None, description="The passages that support the sentence.")


class AnswerQueryResponse(ProtoModel):
    answer_text: str | None = Field(None, description="The answer to the query.")
    references: list[str] | None = Field(
        None, description="Output only. Names of the documents used to generate the answer.")
    citations: list[Citation] | None = Field(
        None, description="Convener extension, only with includeCitations: where each sentence comes from.")


class DataSource(ProtoModel):
    name: str | None = Field(None, description="The data source, e.g. docs.example.com.")
    base_url: str | None = Field(None, description="The URL document URIs are made from.")
    location: str | None = Field(None, description="The folder or archive last ingested.")
    document_count: Int64 | None = Field(None, description="Documents in the data source.")
    embedding_model: str | None = Field(None, description="The model of the chunks' vectors; unset: lexical only.")
    create_time: Timestamp | None = None
    update_time: Timestamp | None = None


class ListDataSourcesRequest(ProtoModel):
    pass


class ListDataSourcesResponse(ProtoModel):
    data_sources: list[DataSource] | None = None


class DeleteDocumentsRequest(ProtoModel):
    names: list[str] | None = Field(None, description="Documents to delete (at most 1000).")
    data_source: str | None = Field(None, description="Or: a whole data source to delete, with its documents.")


class DeleteDocumentsResponse(ProtoModel):
    deleted_count: Int64 | None = Field(None, description="How many documents were deleted.")


class IngestDocumentsRequest(ProtoModel):
    path: str = Field(description="Required. A folder, a zip or tar archive, or one file of Markdown, HTML, "
                                  "reStructuredText or text, on the server, inside CONVENER_KNOWLEDGE_ROOTS.")
    base_url: str | None = Field(
        None, description="URL the documents' URIs are made from with their paths (default: their file:// URL).")
    data_source: str | None = Field(None, description="Data source name (default: the base URL's host).")
    keep_removed: bool | None = Field(
        None, description="Keep documents whose files are gone from the source (default: delete them).")


class IngestProblem(ProtoModel):
    path: str | None = None
    reason: str | None = None


class IngestSummary(ProtoModel):
    """The response of a finished ingestion, and its progress while it runs."""

    data_source: str | None = None
    files_seen: int | None = None
    added: int | None = None
    updated: int | None = None
    unchanged: int | None = None
    removed: int | None = None
    chunks_written: int | None = None
    bytes_read: Int64 | None = None
    problems: list[IngestProblem] | None = None
