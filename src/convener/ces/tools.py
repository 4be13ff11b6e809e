"""MCP tools of the ces service (ces.googleapis.com's AgentService)."""

from __future__ import annotations

from convener.auth.caller import Caller
from convener.ces.apps import AppService
from convener.ces.conversations import ConversationService
from convener.ces.models import App, Conversation
from convener.ces.requests import (
    CreateAppRequest,
    DeleteAppRequest,
    DeleteConversationRequest,
    Empty,
    GetAppRequest,
    GetConversationRequest,
    ListAppsRequest,
    ListAppsResponse,
    ListConversationsRequest,
    ListConversationsResponse,
    UpdateAppRequest,
)
from convener.tooling import CREATES, DELETES, READ_ONLY, UPDATES, ToolRegistry, ToolSpec


def ces_tools(apps: AppService, conversations: ConversationService) -> ToolRegistry:
    registry = ToolRegistry("ces")

    def delete_conversation(request: DeleteConversationRequest, caller: Caller) -> Empty:
        conversations.delete(request, caller)
        return Empty()

    def delete_app(request: DeleteAppRequest, caller: Caller) -> Empty:
        apps.delete(request, caller)
        return Empty()

    registry.add(ToolSpec(
        "list_conversations", "List conversations",
        "Lists the recorded conversations of an app, newest first. Filter with AIP-160 on startTime, endTime, "
        "turnCount, source, inputTypes, entryAgent, deployment, appVersion, languageCode and channelType. "
        "When neither sources nor source is set, conversations of every source are listed.",
        ListConversationsRequest, ListConversationsResponse, READ_ONLY, conversations.list,
    ))
    registry.add(ToolSpec(
        "get_conversation", "Get a conversation",
        "Gets one recorded conversation with its turns, messages, chunks and span tree.",
        GetConversationRequest, Conversation, READ_ONLY, conversations.get,
    ))
    registry.add(ToolSpec(
        "delete_conversation", "Delete a conversation",
        "Deletes a recorded conversation. It cannot be restored.",
        DeleteConversationRequest, Empty, DELETES, delete_conversation,
    ))
    registry.add(ToolSpec(
        "create_app", "Create an app",
        "Creates an app, the container of agents and their recorded conversations, under a location.",
        CreateAppRequest, App, CREATES, apps.create,
    ))
    registry.add(ToolSpec(
        "get_app", "Get an app", "Gets an app.", GetAppRequest, App, READ_ONLY, apps.get,
    ))
    registry.add(ToolSpec(
        "list_apps", "List apps", "Lists the apps of a location, ordered by ID.",
        ListAppsRequest, ListAppsResponse, READ_ONLY, apps.list,
    ))
    registry.add(ToolSpec(
        "update_app", "Update an app",
        "Updates the fields of an app named in updateMask (displayName, description). If app.etag is set it "
        "must match the current etag.",
        UpdateAppRequest, App, UPDATES, apps.update,
    ))
    registry.add(ToolSpec(
        "delete_app", "Delete an app",
        "Deletes an app and everything recorded under it. If etag is set it must match the current etag.",
        DeleteAppRequest, Empty, DELETES, delete_app,
    ))
    return registry
