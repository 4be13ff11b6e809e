"""MCP tools of the app parts: create_/get_/list_/update_/delete_ for agents, tools and toolsets.

Every kind gets the same five tools with the same request shapes as Google's AgentService
(``parent`` + ``<singular>Id`` + body; ``name``; ``parent`` + page; body + ``updateMask``; ``name`` +
``etag``), built here once from the kind's model rather than written out five times per kind.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, NamedTuple

from pydantic import Field, create_model

from convener.api.protojson import ProtoModel
from convener.auth.caller import Caller
from convener.ces.catalog import PartService
from convener.ces.models import PageSize, PageToken
from convener.ces.names import AppChildName
from convener.ces.requests import Empty
from convener.tooling import CREATES, DELETES, READ_ONLY, UPDATES, ToolGroup, ToolSpec


@dataclass(frozen=True)
class PartTools:
    singular: str
    """snake_case, e.g. "agent": names the tools (create_agent) and the request fields (agent, agentId)."""
    plural: str
    title: str
    """Readable singular, e.g. "agent"."""
    about: str
    """One sentence on what the part is, for tool descriptions."""
    update_note: str = ""
    delete_note: str = "App versions that include it keep their copy."


class PartMessages(NamedTuple):
    create: type[ProtoModel]
    get: type[ProtoModel]
    list: type[ProtoModel]
    listed: type[ProtoModel]
    update: type[ProtoModel]
    delete: type[ProtoModel]


@functools.cache
def part_messages(model: type[ProtoModel], name_type: type[AppChildName], singular: str, plural: str,
                  title: str) -> PartMessages:
    """The request and response messages of a kind's tools, made once per kind (their schemas are cached
    per class, and every server built for the kind shares them)."""
    template = name_type.format()
    parent_description = "Required. The app: projects/{project}/locations/{location}/apps/{app}"
    plural_title = plural.title().replace("_", "")

    def model_named(suffix: str, **fields: Any) -> type[ProtoModel]:
        return create_model(f"{suffix}", __base__=ProtoModel, **fields)

    return PartMessages(
        create=model_named(
            f"Create{model.__name__}Request",
            parent=(str, Field(description=parent_description)),
            **{f"{singular}_id": (str | None, Field(None, description=f"ID of the new {title}; generated when unset."))},
            **{singular: (model, Field(description=f"Required. The {title} to create; output-only fields are ignored."))},
        ),
        get=model_named(f"Get{model.__name__}Request", name=(str, Field(description=f"Required. {template}"))),
        list=model_named(
            f"List{plural_title}Request",
            parent=(str, Field(description=parent_description)),
            page_size=(PageSize, None),
            page_token=(PageToken, None),
        ),
        listed=model_named(
            f"List{plural_title}Response",
            **{plural: (list[model] | None, None)},  # type: ignore[valid-type]
            next_page_token=(str | None, Field(None, description="Absent when there are no more pages.")),
        ),
        update=model_named(
            f"Update{model.__name__}Request",
            **{singular: (model, Field(description=f"Required. The {title} with its name set and the fields to change."))},
            update_mask=(str | None, Field(
                None, description='Comma-separated top-level fields to update, e.g. "instruction,tools"; unset or "*" '
                                  "replaces every field."
            )),
        ),
        delete=model_named(
            f"Delete{model.__name__}Request",
            name=(str, Field(description=f"Required. {template}")),
            etag=(str | None, Field(None, description=f"If set, must match the {title}'s current etag.")),
        ),
    )


def register_part_tools(group: ToolGroup, service: PartService[Any], tools: PartTools) -> None:
    model = service.kind.model
    singular, plural, title = tools.singular, tools.plural, tools.title
    # Classes hash by identity; mypy reads the dataclass name types as unhashable.
    messages = part_messages(model, service.kind.name_type, singular, plural, title)  # type: ignore[arg-type]
    create_request, get_request, list_request = messages.create, messages.get, messages.list
    list_response, update_request, delete_request = messages.listed, messages.update, messages.delete

    def create(request: Any, caller: Caller) -> Any:
        return service.create(request.parent, getattr(request, f"{singular}_id"), getattr(request, singular), caller)

    def get(request: Any, caller: Caller) -> Any:
        return service.get(request.name, caller)

    def list_(request: Any, caller: Caller) -> Any:
        items, token = service.list(request.parent, request.page_size, request.page_token, caller)
        return list_response(**{plural: items, "next_page_token": token})

    def update(request: Any, caller: Caller) -> Any:
        return service.update(getattr(request, singular), request.update_mask, caller)

    def delete(request: Any, caller: Caller) -> Empty:
        service.delete(request.name, request.etag, caller)
        return Empty()

    group.add(ToolSpec(f"create_{singular}", f"Create {title}", f"Creates {tools.about}", create_request, model,
                          CREATES, create))
    group.add(ToolSpec(f"get_{singular}", f"Get {title}", f"Gets {tools.about}", get_request, model, READ_ONLY, get))
    group.add(ToolSpec(f"list_{plural}", f"List {plural}", f"Lists the {plural} of an app, ordered by ID.",
                          list_request, list_response, READ_ONLY, list_))
    group.add(ToolSpec(f"update_{singular}", f"Update {title}",
                          f"Updates the fields of {tools.about} named in updateMask. If the etag is set it must match "
                          f"the current etag. {tools.update_note}".strip(), update_request, model, UPDATES, update))
    group.add(ToolSpec(f"delete_{singular}", f"Delete {title}",
                          f"Deletes {tools.about} {tools.delete_note}".strip(),
                          delete_request, Empty, DELETES, delete))
