"""MCP tools of the ces service (ces.googleapis.com's AgentService)."""

from __future__ import annotations

from convener.auth.caller import Caller
from convener.ces.apps import AppService
from convener.ces.changelogs import (
    Changelog,
    ChangelogService,
    GetChangelogRequest,
    ListChangelogsRequest,
    ListChangelogsResponse,
)
from convener.ces.conversations import ConversationService
from convener.ces.definitions import AppVersion
from convener.ces.evaluation.tools import register_evaluation_tools, register_operation_tools
from convener.ces.models import App, Conversation
from convener.ces.part_tools import PartTools, register_part_tools
from convener.ces.requests import (
    CreateAppRequest,
    CreateAppVersionRequest,
    DeleteAppRequest,
    DeleteAppVersionRequest,
    DeleteConversationRequest,
    Empty,
    ExportAppRequest,
    ExportAppResponse,
    GetAppRequest,
    GetAppVersionRequest,
    GetConversationRequest,
    ImportAppRequest,
    ListAppsRequest,
    ListAppsResponse,
    ListAppVersionsRequest,
    ListAppVersionsResponse,
    ListConversationsRequest,
    ListConversationsResponse,
    UpdateAppRequest,
)
from convener.ces.runtime_services import Runtime
from convener.ces.session_models import RunSessionRequest, RunSessionResponse
from convener.ces.transfers import (
    ExportAppOperation,
    ImportAppOperation,
    StartExportAppRequest,
    StartImportAppRequest,
    export_view,
    import_view,
)
from convener.tooling import CREATES, DELETES, READ_ONLY, RUNS, UPDATES, ToolGroup, ToolRegistry, ToolSpec


def ces_tools(apps: AppService, conversations: ConversationService, runtime: Runtime,
              changelogs: ChangelogService) -> ToolRegistry:
    registry = ToolRegistry("ces")
    conversation_tools = registry.group("conversations")
    agents = registry.group("agents")

    def delete_conversation(request: DeleteConversationRequest, caller: Caller) -> Empty:
        conversations.delete(request, caller)
        return Empty()

    def delete_app(request: DeleteAppRequest, caller: Caller) -> Empty:
        apps.delete(request, caller)
        return Empty()

    conversation_tools.add(ToolSpec(
        "list_conversations", "List conversations",
        "Lists the recorded conversations of an app, newest first. Filter with AIP-160 on startTime, endTime, "
        "turnCount, source, inputTypes, entryAgent, deployment, appVersion, languageCode and channelType. "
        "When neither sources nor source is set, conversations of every source are listed. A filter on fields "
        "other than startTime and source examines a bounded number of conversations per call, so a page may be "
        "short or empty while nextPageToken is set: follow it until it is absent.",
        ListConversationsRequest, ListConversationsResponse, READ_ONLY, conversations.list,
    ))
    conversation_tools.add(ToolSpec(
        "get_conversation", "Get a conversation",
        "Gets one recorded conversation with its turns, messages, chunks and span tree.",
        GetConversationRequest, Conversation, READ_ONLY, conversations.get,
    ))
    conversation_tools.add(ToolSpec(
        "delete_conversation", "Delete a conversation",
        "Deletes a recorded conversation. It cannot be restored.",
        DeleteConversationRequest, Empty, DELETES, delete_conversation,
    ))
    agents.add(ToolSpec(
        "create_app", "Create an app",
        "Creates an app, the container of agents and their recorded conversations, under a location.",
        CreateAppRequest, App, CREATES, apps.create,
    ))
    conversation_tools.add(ToolSpec(
        "get_app", "Get an app", "Gets an app.", GetAppRequest, App, READ_ONLY, apps.get,
    ))
    conversation_tools.add(ToolSpec(
        "list_apps", "List apps", "Lists the apps of a location, ordered by ID.",
        ListAppsRequest, ListAppsResponse, READ_ONLY, apps.list,
    ))
    agents.add(ToolSpec(
        "update_app", "Update an app",
        "Updates the fields of an app named in updateMask (displayName, description). If app.etag is set it "
        "must match the current etag.",
        UpdateAppRequest, App, UPDATES, apps.update,
    ))
    agents.add(ToolSpec(
        "delete_app", "Delete an app",
        "Deletes an app and everything recorded under it. If etag is set it must match the current etag.",
        DeleteAppRequest, Empty, DELETES, delete_app,
    ))
    register_part_tools(agents, runtime.agents, PartTools(
        "agent", "agents", "agent",
        "an agent of an app: its instruction, tools, toolsets, child agents, guardrails, callbacks and kind "
        "(llmAgent, playbookAgent, remoteAgent or pythonAgent).",
    ))
    register_part_tools(agents, runtime.tools, PartTools(
        "tool", "tools", "tool",
        "a tool of an app: a clientFunction (answered by the session's client), an openApiTool (one operation of "
        "an OpenAPI 3 document) or a pythonFunction (an entryPoint in an allowed module).",
    ))
    register_part_tools(agents, runtime.toolsets, PartTools(
        "toolset", "toolsets", "toolset",
        "a toolset of an app: the tools of another MCP server (mcpToolset.serverAddress, or a stdio command).",
    ))
    register_part_tools(agents, runtime.guardrails, PartTools(
        "guardrail", "guardrails", "guardrail",
        "a guardrail of an app: a contentFilter (banned phrases in user inputs or agent responses) or a "
        "codeCallback (Python callables deciding OK or TRIGGER), its action (respondImmediately or "
        "transferAgent) and whether it is enabled. Agents name it in agent.guardrails, the app in app.guardrails.",
    ))
    _register_versions(agents, runtime)
    register_part_tools(agents, runtime.deployments, PartTools(
        "deployment", "deployments", "deployment",
        "a deployment of an app: a displayName, the appVersion sessions started through it run (…/versions/- for "
        "the draft) and a channelProfile stored as given. Moving it to another version changes new sessions only.",
        delete_note="Conversations that came through it keep its name.",
    ))
    register_evaluation_tools(registry.group("evaluations"), runtime.evaluations)
    _register_changelogs(registry.group("evaluations"), changelogs)
    register_operation_tools(registry.group("operations"), runtime.operations)

    def export_app(request: ExportAppRequest, caller: Caller) -> ExportAppResponse:
        return ExportAppResponse(app_content=runtime.bundles.export(request.name, caller))

    def import_app(request: ImportAppRequest, caller: Caller) -> App:
        return runtime.bundles.import_(request.parent, request.app_id, request.app_content, bool(request.replace), caller)

    agents.add(ToolSpec(
        "export_app", "Export an app",
        "Exports an app's settings, agents, tools, toolsets and guardrails as readable YAML (references by ID).",
        ExportAppRequest, ExportAppResponse, READ_ONLY, export_app,
    ))
    _register_transfers(agents, runtime)
    agents.add(ToolSpec(
        "import_app", "Import an app",
        "Creates an app from YAML as export_app writes it, all or nothing. With replace, overwrites the "
        "definition of an existing app and keeps its conversations.",
        ImportAppRequest, App, UPDATES, import_app,
    ))
    conversation_tools.add(ToolSpec(
        "run_session", "Run a session turn",
        "Runs one turn of a session with the app's agents: config.session names the session (it starts on first "
        "use, on config.entryAgent or the app's rootAgent, and on the draft, config.appVersion or the version "
        "config.deployment names then); inputs are "
        "SessionInputs (text, dtmf, audio, toolResponses, image, blob, variables, event). Returns the agent's "
        "outputs: text, client tool calls to answer with toolResponses, payloads, endSession, and on the last "
        "output diagnosticInfo with the turn's messages (agent transfers, updated variables) and span tree. "
        "Every turn is recorded in the conversation of the same ID. With a progressToken, each tool call, tool "
        "response, transfer and variable update is sent as a progress notification as it happens.",
        RunSessionRequest, RunSessionResponse, RUNS, runtime.sessions.run, progress_handler=runtime.sessions.run,
    ))
    return registry


def _register_versions(group: ToolGroup, runtime: Runtime) -> None:
    versions = runtime.versions

    def create(request: CreateAppVersionRequest, caller: Caller) -> AppVersion:
        return versions.create(request.parent, request.app_version_id, request.app_version, caller)

    def get(request: GetAppVersionRequest, caller: Caller) -> AppVersion:
        return versions.versions.get(request.name, caller)

    def list_(request: ListAppVersionsRequest, caller: Caller) -> ListAppVersionsResponse:
        items, token = versions.versions.list(request.parent, request.page_size, request.page_token, caller)
        return ListAppVersionsResponse(app_versions=items, next_page_token=token)

    def delete(request: DeleteAppVersionRequest, caller: Caller) -> Empty:
        versions.versions.delete(request.name, request.etag, caller)
        return Empty()

    group.add(ToolSpec(
        "create_app_version", "Create an app version",
        "Snapshots the app with its agents, tools, toolsets and guardrails as an immutable version that sessions "
        "can run.",
        CreateAppVersionRequest, AppVersion, CREATES, create,
    ))
    group.add(ToolSpec("get_app_version", "Get an app version", "Gets an app version with its snapshot.",
                          GetAppVersionRequest, AppVersion, READ_ONLY, get))
    group.add(ToolSpec("list_app_versions", "List app versions", "Lists the versions of an app, ordered by ID.",
                          ListAppVersionsRequest, ListAppVersionsResponse, READ_ONLY, list_))
    group.add(ToolSpec("delete_app_version", "Delete an app version",
                          "Deletes an app version. Sessions that run it can no longer start.",
                          DeleteAppVersionRequest, Empty, DELETES, delete))


def _register_changelogs(group: ToolGroup, changelogs: ChangelogService) -> None:
    # In the evaluations toolset, beside the results whose changelog field names an entry: "which change broke
    # this evaluation?" is answered from get_evaluation_result, then get_changelog.
    group.add(ToolSpec(
        "list_changelogs", "List changelogs",
        "Lists the changes of an app and its parts (agents, tools, toolsets, guardrails, versions, evaluations, "
        "datasets, ...), newest first: who, what action, which resource, before and after. Filter with AIP-160 on "
        "action, resource_type, resource_name, author and create_time.",
        ListChangelogsRequest, ListChangelogsResponse, READ_ONLY, changelogs.list,
    ))
    group.add(ToolSpec(
        "get_changelog", "Get a changelog",
        "Gets one change of an app: the resource before and after it, and the resources changed with it.",
        GetChangelogRequest, Changelog, READ_ONLY, changelogs.get,
    ))


def _register_transfers(group: ToolGroup, runtime: Runtime) -> None:
    transfers = runtime.transfers

    def export(request: StartExportAppRequest, caller: Caller) -> ExportAppOperation:
        return export_view(transfers.start_export(request, caller))

    def import_(request: StartImportAppRequest, caller: Caller) -> ImportAppOperation:
        return import_view(transfers.start_import(request, caller))

    waits = ("Returns the long-running operation at once: wait_operation reports its progress (MCP progress "
             "notifications, a part at a time) and returns it done, with response.appContent or its error; "
             "cancel_operation stops it.")
    group.add(ToolSpec(
        "start_export_app", "Start exporting an app",
        "Exports an app's settings, agents, tools, toolsets and guardrails as a zip of {appId}/app.yaml (export_app's "
        f"YAML): content once done, or a new file at path on the server. {waits}",
        StartExportAppRequest, ExportAppOperation, CREATES, export))
    group.add(ToolSpec(
        "start_import_app", "Start importing an app",
        "Creates (or with replace, overwrites) an app from a start_export_app zip or export_app YAML, given as "
        f"content or a path on the server, all or nothing: a failed or cancelled import keeps nothing. {waits}",
        StartImportAppRequest, ImportAppOperation, CREATES, import_))
