"""Request and response messages of the ces tools (AgentService), as in Google's reference."""

from __future__ import annotations

from pydantic import Field

from convener.api.protojson import ProtoModel
from convener.api.stored import StoredBody
from convener.ces.definitions import AppVersion
from convener.ces.models import App, Conversation, PageSize, PageToken, Source

FILTER_DESCRIPTION = "AIP-160 filter, e.g. 'turnCount > 2 AND inputTypes:INPUT_TYPE_TEXT'. See https://google.aip.dev/160."


class ListConversationsRequest(ProtoModel):
    parent: str = Field(description="Required. The app to list conversations from: projects/{project}/locations/{location}/apps/{app}")
    page_size: PageSize = None
    page_token: PageToken = None
    filter: str | None = Field(None, description=FILTER_DESCRIPTION)
    source: Source | None = Field(
        None, description="Deprecated; use sources. Used only when sources is empty: lists this one source."
    )
    sources: list[Source] | None = Field(
        None, description="The sources to list. When empty (and source unset) every source is listed."
    )


class ListConversationsResponse(ProtoModel):
    conversations: list[StoredBody[Conversation]] | None = None
    """Served as stored: each body was validated when it was written."""
    next_page_token: str | None = Field(None, description="Absent when there are no more pages.")


class GetConversationRequest(ProtoModel):
    name: str = Field(description="Required. projects/{project}/locations/{location}/apps/{app}/conversations/{conversation}")
    source: Source | None = Field(None, description="Optional. The source the conversation is expected to have.")


class DeleteConversationRequest(ProtoModel):
    name: str = Field(description="Required. projects/{project}/locations/{location}/apps/{app}/conversations/{conversation}")


class Empty(ProtoModel):
    """google.protobuf.Empty."""


class CreateAppRequest(ProtoModel):
    parent: str = Field(description="Required. projects/{project}/locations/{location}")
    app_id: str | None = Field(None, description="ID of the new app; generated when unset.")
    app: App = Field(description="Required. The app to create; name and output-only fields are ignored.")


class GetAppRequest(ProtoModel):
    name: str = Field(description="Required. projects/{project}/locations/{location}/apps/{app}")


class ListAppsRequest(ProtoModel):
    parent: str = Field(description="Required. projects/{project}/locations/{location}")
    page_size: PageSize = None
    page_token: PageToken = None
    filter: str | None = Field(None, description="AIP-160 filter over displayName, createTime, updateTime.")


class ListAppsResponse(ProtoModel):
    apps: list[App] | None = None
    next_page_token: str | None = None


class UpdateAppRequest(ProtoModel):
    app: App = Field(description="Required. The app with its name set and the fields to change.")
    update_mask: str | None = Field(
        None, description='Comma-separated fields to update, e.g. "displayName,description"; unset or "*" updates all.'
    )


class DeleteAppRequest(ProtoModel):
    name: str = Field(description="Required. projects/{project}/locations/{location}/apps/{app}")
    etag: str | None = Field(None, description="If set, must match the app's current etag.")


class CreateAppVersionRequest(ProtoModel):
    parent: str = Field(description="Required. projects/{project}/locations/{location}/apps/{app}")
    app_version_id: str | None = Field(None, description="ID of the new version; generated when unset.")
    app_version: AppVersion = Field(description="Required. displayName and description; the snapshot is taken now.")


class GetAppVersionRequest(ProtoModel):
    name: str = Field(description="Required. projects/{project}/locations/{location}/apps/{app}/versions/{version}")


class ListAppVersionsRequest(ProtoModel):
    parent: str = Field(description="Required. projects/{project}/locations/{location}/apps/{app}")
    page_size: PageSize = None
    page_token: PageToken = None


class ListAppVersionsResponse(ProtoModel):
    app_versions: list[AppVersion] | None = None
    next_page_token: str | None = None


class DeleteAppVersionRequest(ProtoModel):
    name: str = Field(description="Required. projects/{project}/locations/{location}/apps/{app}/versions/{version}")
    etag: str | None = Field(None, description="If set, must match the version's etag.")


class ExportAppRequest(ProtoModel):
    name: str = Field(description="Required. projects/{project}/locations/{location}/apps/{app}")


class ExportAppResponse(ProtoModel):
    app_content: str | None = Field(None, description="The app, agents, tools and toolsets as YAML.")


class ImportAppRequest(ProtoModel):
    parent: str = Field(description="Required. projects/{project}/locations/{location}")
    app_id: str | None = Field(None, description="ID of the app to write; the file's id when unset.")
    app_content: str = Field(description="Required. YAML as export_app writes it.")
    replace: bool | None = Field(
        None, description="Overwrite the definition of an existing app (its conversations are kept)."
    )
