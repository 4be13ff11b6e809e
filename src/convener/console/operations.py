"""The console's operations pages: a location's long-running operations (``list_operations``, paged, the
caller's own as the tool lists them) with their state and progress read from their metadata, one operation
(``get_operation``: metadata, error, response), and its Cancel button (a POST with the CSRF token, through
``Console.checked_form``, calling ``cancel_operation``).

URLs mirror the names: ``/console/projects/{p}/locations/{l}/operations``, ``…/operations/{id}``, and
``…/operations/{id}:cancel`` (the REST method's URL) for the form."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from convener.api.errors import Code
from convener.ces.requests import Empty
from convener.console.access import Viewer
from convener.console.views import Console, location_of, page_link, with_paging
from convener.longrunning.models import ListOperationsResponse, Operation

FILTERS = (("", "All"), ("done=false", "Running"), ("done=true", "Done"))


@dataclass(frozen=True)
class OperationView:
    """What a row or the header of an operation shows."""

    name: str
    kind: str
    """The metadata's ``@type``, its last part (``IngestMetadata``, ``EvaluationRunMetadata`` …)."""
    state: str
    """running, cancelling, succeeded, failed or cancelled."""
    progress: str
    done_count: int | None
    total_count: int | None
    subject: str
    """What the operation works on, when its metadata names it (an app, a data source, an evaluation run)."""

    @property
    def id(self) -> str:
        return self.name.rsplit("/", 1)[-1]


def operation_view(operation: Operation) -> OperationView:
    metadata = operation.metadata or {}
    found = metadata.get("progress")
    progress: dict[str, Any] = found if isinstance(found, dict) else {}
    total = progress.get("totalCount")
    finished = sum(value for key in ("completedCount", "errorCount")
                   if isinstance(value := progress.get(key), int))
    text = ""
    if isinstance(total, int) and total > 0:
        text = f"{finished} of {total} finished" + (f", {progress['errorCount']} failed"
                                                     if progress.get("errorCount") else "")
    elif isinstance(progress.get("filesSeen"), int):
        indexed = sum(value for key in ("added", "updated") if isinstance(value := progress.get(key), int))
        text = f"{progress['filesSeen']} files read, {indexed} indexed"
    if operation.done:
        code = operation.error.code if operation.error else 0
        state = "succeeded" if not code else "cancelled" if code == Code.CANCELLED.value else "failed"
    else:
        state = "cancelling" if metadata.get("cancelRequested") else "running"
    subject = next((str(metadata[key]) for key in ("app", "dataSource", "evaluationRun", "evaluation")
                    if isinstance(metadata.get(key), str)), "")
    return OperationView(name=operation.name or "", kind=str(metadata.get("@type", "")).rsplit(".", 1)[-1],
                         state=state, progress=text, done_count=finished if isinstance(total, int) else None,
                         total_count=total if isinstance(total, int) and total > 0 else None, subject=subject)


class OperationPages:
    def __init__(self, console: Console) -> None:
        self.console = console

    async def operations(self, request: Request, viewer: Viewer) -> Response:
        location = location_of(request)
        query = request.query_params
        arguments: dict[str, Any] = {"name": location}
        filter_text = query.get("filter", "")
        if filter_text:
            arguments["filter"] = filter_text
        with_paging(request, arguments)
        listed = await self.console.tools.call("list_operations", arguments, viewer.caller, ListOperationsResponse)
        return self.console.render(
            request, "operations_list.html", viewer, location=location,
            operations=[operation_view(operation) for operation in listed.operations or []],
            filters=FILTERS, filter_text=filter_text, next_page=page_link(request, listed.next_page_token),
            first_page=page_link(request, "") if request.query_params.get("pageToken") else "")

    async def operation(self, request: Request, viewer: Viewer) -> Response:
        name = f"{location_of(request)}/operations/{request.path_params['operation']}"
        operation = await self.console.tools.call("get_operation", {"name": name}, viewer.caller, Operation)
        return self.console.render(request, "operations_operation.html", viewer, name=name, location=location_of(request),
                                   operation=operation, view=operation_view(operation),
                                   may_cancel=self.console.tools.may_call("cancel_operation", viewer.caller))

    async def cancel(self, request: Request, viewer: Viewer) -> Response:
        form = await self.console.checked_form(request)
        if isinstance(form, Response):
            return form
        name = f"{location_of(request)}/operations/{request.path_params['operation']}"
        await self.console.tools.call("cancel_operation", {"name": name}, viewer.caller, Empty)
        return RedirectResponse(f"/console/{name}", status_code=303)
