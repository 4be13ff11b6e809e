"""Wire models of google.longrunning: Operation and its requests, and google.rpc.Status."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from convener.api.protojson import ProtoModel
from convener.ces.models import PageSize, PageToken


class Status(ProtoModel):
    """google.rpc.Status: a code of google.rpc.Code, a message for developers, details."""

    code: int | None = Field(None, description="The status code, a value of google.rpc.Code (e.g. 1 CANCELLED).")
    message: str | None = Field(None, description="A developer-facing error message, in English.")
    details: list[dict[str, Any]] | None = Field(
        None, description='Messages that carry the error details, each with its "@type".')


class Operation(ProtoModel):
    name: str | None = Field(
        None, description="The operation's name: projects/{project}/locations/{location}/operations/{operation}")
    metadata: dict[str, Any] | None = Field(
        None, description='What the operation is doing, with its "@type"; for evaluation runs, its progress.')
    done: bool | None = Field(None, description="True once the operation has finished: then error or response is set.")
    error: Status | None = Field(None, description="Why it failed, or code 1 (CANCELLED) when it was cancelled.")
    response: dict[str, Any] | None = Field(None, description='The result on success, with its "@type".')


class GetOperationRequest(ProtoModel):
    name: str = Field(description="Required. projects/{project}/locations/{location}/operations/{operation}")


class ListOperationsRequest(ProtoModel):
    name: str = Field(description="Required. The location: projects/{project}/locations/{location}")
    filter: str | None = Field(None, description='"done=true" or "done=false"; unset lists every operation.')
    page_size: PageSize = None
    page_token: PageToken = None


class ListOperationsResponse(ProtoModel):
    operations: list[Operation] | None = Field(None, description="The operations that match the request's filter.")
    next_page_token: str | None = Field(
        None, description="Token for the next page, as pageToken; empty when there are no more operations.")


class CancelOperationRequest(ProtoModel):
    name: str = Field(description="Required. The operation to cancel; work not yet started is not started.")


class DeleteOperationRequest(ProtoModel):
    name: str = Field(description="Required. A finished operation to forget; its results stay.")


class WaitOperationRequest(ProtoModel):
    name: str = Field(description="Required. The operation to wait for.")
    timeout: str | None = Field(
        None, description='How long to wait at most, e.g. "30s" (default 60s, at most 600s). Progress is reported '
                          "as MCP progress notifications when the call carries a progressToken.")
