"""Wire models of the chat tools: Google Chat MCP's shapes (``list_messages`` exactly as its reference,
seed 002) and, for ``list_memberships``, the Chat REST API's ``Membership``."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import Field

from convener.api.protojson import ProtoModel, Timestamp


class UserType(StrEnum):
    USER_TYPE_UNSPECIFIED = "USER_TYPE_UNSPECIFIED"
    HUMAN = "HUMAN"
    APP = "APP"


class AttachmentSource(StrEnum):
    SOURCE_UNSPECIFIED = "SOURCE_UNSPECIFIED"
    DRIVE_FILE = "DRIVE_FILE"
    UPLOADED_CONTENT = "UPLOADED_CONTENT"


class QuoteType(StrEnum):
    QUOTE_TYPE_UNSPECIFIED = "QUOTE_TYPE_UNSPECIFIED"
    REPLY = "REPLY"
    FORWARD = "FORWARD"


class ConversationType(StrEnum):
    SPACE_TYPE_UNSPECIFIED = "SPACE_TYPE_UNSPECIFIED"
    SPACE = "SPACE"
    GROUP_CHAT = "GROUP_CHAT"
    DIRECT_MESSAGE = "DIRECT_MESSAGE"


class User(ProtoModel):
    user_id: str | None = Field(None, description="Resource name of a Chat user. Format: users/{user}.")
    display_name: str | None = Field(None, description="The display name of a Chat user.")
    email: str | None = Field(
        None, description="The email address of the user. This field is only populated if the user type is HUMAN."
    )
    user_type: UserType | None = Field(None, description="The type of user.")


class ChatAttachmentMetadata(ProtoModel):
    attachment_id: str | None = Field(
        None, description="Resource name of the attachment. Format: spaces/{space}/messages/{message}/attachments/{attachment}."
    )
    filename: str | None = Field(None, description="Name of the attachment.")
    mime_type: str | None = Field(None, description="Content type (MIME type).")
    source: AttachmentSource | None = Field(None, description="The source of the attachment.")
    drive_file_id: str | None = Field(
        None, description="Output only. The Google Drive file ID. Only populated if the source is DRIVE_FILE."
    )


class ReactionSummary(ProtoModel):
    emoji: str | None = Field(None, description="The unicode string of the emoji or the name of the custom emoji.")
    count: int | None = Field(None, description="The total number of reactions using the associated emoji.")


class ForwardedMetadata(ProtoModel):
    conversation_id: str | None = Field(
        None, description="Output only. The resource name of the source conversation. Format: spaces/{space}"
    )
    conversation_display_name: str | None = Field(
        None,
        description="Output only. The display name of the source conversation at the time of forwarding: the "
        "space's name, the other participant's name for a 1:1 DM, a name generated from the members for an "
        "unnamed group chat.",
    )


class QuotedMessageMetadata(ProtoModel):
    message_id: str | None = Field(
        None, description="Output only. Resource name of the quoted or forwarded message. Format: spaces/{space}/messages/{message}"
    )
    last_update_time: Timestamp | None = Field(
        None, description="Output only. When the original message was created or last updated before it was quoted."
    )
    quote_type: QuoteType | None = Field(None, description="Output only. The type of quote.")
    plaintext_body: str | None = Field(
        None,
        description="Output only. Snapshot of the original message's text when it was quoted or forwarded: "
        "Markdown for FORWARD, plain text for REPLY.",
    )
    sender: str | None = Field(None, description="Output only. The display name of the original message's author.")
    attachments: list[ChatAttachmentMetadata] | None = Field(
        None, description="Output only. Attachments of the original message. Only for FORWARD."
    )
    forwarded_metadata: ForwardedMetadata | None = Field(
        None, description="Output only. The conversation the message was forwarded from. Only for FORWARD."
    )


class ChatMessage(ProtoModel):
    message_id: str | None = Field(
        None, description="Resource name of the message. Format: spaces/{space}/messages/{message}"
    )
    thread_id: str | None = Field(
        None,
        description="The thread this message belongs to; empty when the message is not part of a thread. "
        "Format: spaces/{space}/threads/{thread}",
    )
    plaintext_body: str | None = Field(None, description="The message's text, in Markdown.")
    sender: User | None = Field(None, description="The sender of the message.")
    create_time: Timestamp | None = Field(None, description="Output only. When the message was created.")
    threaded_reply: bool | None = Field(None, description="Whether the message is a reply in a thread.")
    attachments: list[ChatAttachmentMetadata] | None = Field(None, description="Attachments of the message.")
    reaction_summaries: list[ReactionSummary] | None = Field(
        None, description="The summary of emoji reactions on the message."
    )
    quoted_message_metadata: QuotedMessageMetadata | None = Field(
        None, description="Output only. The original message this message quotes or forwards."
    )


PageToken = Annotated[str | None, Field(description="nextPageToken of the previous call with the same arguments.")]


class ListChatMessagesRequest(ProtoModel):
    conversation_id: str = Field(
        description="Required. The conversation: a space, a direct message (DM) or a group chat. Format: spaces/{space}"
    )
    thread_id: str | None = Field(
        None,
        description="Optional. A thread of the conversation: only its messages are returned. "
        "Format: spaces/{space}/threads/{thread}",
    )
    page_size: int | None = Field(
        None, description="Optional. Maximum messages to return; default 20, at most 50 (larger values become 50)."
    )
    page_token: PageToken = None
    start_time: str | None = Field(
        None, description="Optional. ISO 8601 timestamp: only messages created after it are returned."
    )
    end_time: str | None = Field(
        None, description="Optional. ISO 8601 timestamp: only messages created before it are returned."
    )


class ListChatMessagesResponse(ProtoModel):
    messages: list[ChatMessage] | None = Field(None, description="The messages, newest first.")
    next_page_token: str | None = Field(None, description="Send as pageToken for the next page; absent on the last.")


class Conversation(ProtoModel):
    conversation_id: str | None = Field(None, description="The conversation's ID. Format: spaces/{space}")
    display_name: str | None = Field(
        None,
        description="The space's name; for a DM the other participant's name; for an unnamed group chat a name "
        "made from its members' names.",
    )
    conversation_type: ConversationType | None = Field(None, description="SPACE, GROUP_CHAT or DIRECT_MESSAGE.")
    last_active_time: Timestamp | None = Field(None, description="When the last message was posted.")


class SearchConversationsRequest(ProtoModel):
    space_name_query: str | None = Field(
        None, description="Optional. Text to find, case-insensitively, within the conversations' display names."
    )
    page_size: int | None = Field(
        None, description="Optional. Maximum conversations to return; default 100, at most 1000."
    )
    page_token: PageToken = None
    participants: list[str] | None = Field(
        None,
        description="Optional. Email addresses (or users/{user}) of participants besides the caller: one finds "
        "the 1:1 DM with that person, several the group chats with exactly those people and the caller.",
    )


class SearchConversationsResponse(ProtoModel):
    conversations: list[Conversation] | None = None
    next_page_token: str | None = Field(
        None, description="More pages may follow even after an empty page while this is set."
    )


class OrderBy(StrEnum):
    ORDER_BY_UNSPECIFIED = "ORDER_BY_UNSPECIFIED"
    CREATE_TIME_DESC = "CREATE_TIME_DESC"
    CREATE_TIME_ASC = "CREATE_TIME_ASC"
    RELEVANCE_DESC = "RELEVANCE_DESC"


class SearchParameters(ProtoModel):
    keywords: list[str] | None = Field(None, description="Optional. Keywords the messages must contain (all of them).")
    conversation_id: str | None = Field(
        None, description="Optional. Only this conversation, as search_conversations returns it. Format: spaces/{space}"
    )
    sender: str | None = Field(
        None, description="Optional. Only messages of this sender: users/{user} or an email address."
    )
    is_unread: bool | None = Field(
        None, description="Optional. Convener keeps no read state: true is refused with UNIMPLEMENTED."
    )
    has_link: bool | None = Field(None, description="Optional. Only messages that contain (or lack) a link.")
    start_time: str | None = Field(
        None, description="Optional. ISO 8601 timestamp: only messages created at or after it."
    )
    end_time: str | None = Field(None, description="Optional. ISO 8601 timestamp: only messages created before it.")
    mentions_me: bool | None = Field(None, description="Optional. Only messages that mention the caller.")
    conversation_includes_user: str | None = Field(
        None,
        description="Optional. Only conversations this user (users/{user} or an email) is a member of.",
    )
    space_display_names: list[str] | None = Field(
        None, description="Optional. Only conversations whose display name contains one of these (case-insensitive)."
    )


class SearchMessagesRequest(ProtoModel):
    search_parameters: SearchParameters = Field(description="Required. The search parameters to use.")
    order_by: OrderBy | None = Field(
        None, description="Optional. CREATE_TIME_DESC, CREATE_TIME_ASC or RELEVANCE_DESC (the default)."
    )
    page_size: int | None = Field(None, description="Optional. Maximum results; default 25, at most 100.")
    page_token: PageToken = None


class SearchMessagesResponse(ProtoModel):
    messages: list[ChatMessage] | None = Field(None, description="The messages found, in the requested order.")
    next_page_token: str | None = Field(None, description="Send as pageToken for the next page; absent on the last.")


class SendMessageRequest(ProtoModel):
    conversation_id: str = Field(
        description="Required. The conversation to send to, e.g. spaces/AAAA. Format: spaces/{space}"
    )
    thread_id: str | None = Field(
        None,
        description="Optional. The thread to reply in, e.g. spaces/AAAA/threads/BBBB; a new thread when unset.",
    )
    message_text: str = Field(
        description="Required. The message, in Google Chat's Markdown subset: *bold*, _italic_, ~strikethrough~, "
        "`monospace`, ```monospace block```, * bulleted items, > block quotes, <url|display text> links and "
        "<users/{user}> mentions.",
    )


class SendMessageResponse(ProtoModel):
    message: ChatMessage | None = Field(None, description="The message that was sent.")


class MemberType(StrEnum):
    TYPE_UNSPECIFIED = "TYPE_UNSPECIFIED"
    HUMAN = "HUMAN"
    BOT = "BOT"


class Member(ProtoModel):
    name: str | None = Field(None, description="users/{user}")
    display_name: str | None = Field(None, description="Output only. The user's display name.")
    type: MemberType | None = Field(None, description="HUMAN or BOT (a Chat app).")


class MembershipRole(StrEnum):
    MEMBERSHIP_ROLE_UNSPECIFIED = "MEMBERSHIP_ROLE_UNSPECIFIED"
    ROLE_MEMBER = "ROLE_MEMBER"
    ROLE_MANAGER = "ROLE_MANAGER"


class MembershipState(StrEnum):
    MEMBERSHIP_STATE_UNSPECIFIED = "MEMBERSHIP_STATE_UNSPECIFIED"
    JOINED = "JOINED"
    INVITED = "INVITED"
    NOT_A_MEMBER = "NOT_A_MEMBER"


class Membership(ProtoModel):
    name: str | None = Field(None, description="spaces/{space}/members/{member}")
    state: MembershipState | None = Field(None, description="Output only. JOINED for every stored member.")
    role: MembershipRole | None = Field(None, description="ROLE_MEMBER, or ROLE_MANAGER for a space's managers.")
    member: Member | None = Field(None, description="The member.")
    create_time: Timestamp | None = Field(None, description="When the member joined, where the source says.")


class ListMembershipsRequest(ProtoModel):
    parent: str = Field(description="Required. The conversation whose members to list. Format: spaces/{space}")
    page_size: int | None = Field(None, description="Optional. Maximum memberships; default 100, at most 1000.")
    page_token: PageToken = None


class ListMembershipsResponse(ProtoModel):
    memberships: list[Membership] | None = None
    next_page_token: str | None = Field(None, description="Send as pageToken for the next page; absent on the last.")
