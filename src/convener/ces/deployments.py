"""Deployments: a named, stable way to reach an app version (CES's ``Deployment``), with its channel settings.

A deployment is an app part like an agent: stored in ``ces_definitions`` and written through the one catalog
path (``convener.ces.catalog.PartService``), so creating, updating and deleting one are checked, etag-guarded
and recorded like every other part. What is particular to it is how ``run_session`` uses it: a session started
through a deployment runs the version the deployment names *at that moment*, pinned on the session, so moving
the deployment to another version changes new sessions only.
"""

from __future__ import annotations

import re

from pydantic import Field
from sqlalchemy import Connection, bindparam, select

from convener.api.errors import FailedPrecondition, InvalidArgument, NotFound
from convener.api.protojson import ProtoModel, Timestamp
from convener.ces.catalog import AppParts
from convener.ces.names import AppChildName, AppName, AppVersionName, DeploymentName
from convener.ces.tables import definitions
from convener.outside.limits import DISPLAY_NAME_CHARACTERS

DRAFT_ID = "-"
"""``…/versions/-`` names the app's draft rather than a version (as CES's v1beta reference allows)."""
NOISE_SUPPRESSION_LEVELS = ("low", "moderate", "high", "very_high")
ENUM_NAME = re.compile(r"[A-Z][A-Z0-9_]{0,63}")


class PersonaProperty(ProtoModel):
    persona: str | None = Field(None, description="UNKNOWN, CONCISE or CHATTY.")


class WebWidgetConfig(ProtoModel):
    modality: str | None = Field(None, description="e.g. CHAT_AND_VOICE.")
    theme: str | None = Field(None, description="e.g. LIGHT or DARK.")
    web_widget_title: str | None = Field(None, description="Title of the web widget.")


class ChannelProfile(ProtoModel):
    """How the agent behaves on one channel. Stored as given; Convener's runtime does not read it."""

    profile_id: str | None = Field(None, description="ID of the channel profile.")
    channel_type: str | None = Field(None, description="UNKNOWN, WEB_UI, API, TWILIO, GOOGLE_TELEPHONY_PLATFORM, "
                                                        "CONTACT_CENTER_AS_A_SERVICE, FIVE9 or CONTACT_CENTER_INTEGRATION.")
    persona_property: PersonaProperty | None = Field(None, description="The agent's persona on this channel.")
    disable_dtmf: bool | None = Field(None, description="Whether DTMF (keypad) input is turned off.")
    disable_barge_in_control: bool | None = Field(
        None, description="Whether the user may not interrupt the agent while it speaks.")
    web_widget_config: WebWidgetConfig | None = Field(None, description="The web widget's look, for WEB_UI.")
    noise_suppression_level: str | None = Field(None, description="low, moderate, high or very_high.")


class Deployment(ProtoModel):
    name: str | None = Field(None, description="projects/{project}/locations/{location}/apps/{app}/deployments/{deployment}")
    display_name: str | None = Field(None, description="Required.")
    app_version: str | None = Field(
        None, description="Required. The version sessions run: projects/…/apps/{app}/versions/{version}; "
                          "versions/- runs the draft.")
    channel_profile: ChannelProfile | None = Field(None, description="Channel settings, stored as given.")
    create_time: Timestamp | None = Field(None, description="Output only.")
    update_time: Timestamp | None = Field(None, description="Output only.")
    etag: str | None = Field(None, description="Output only.")


CHANNEL_TYPES = ("UNKNOWN", "WEB_UI", "API", "TWILIO", "GOOGLE_TELEPHONY_PLATFORM", "CONTACT_CENTER_AS_A_SERVICE",
                 "FIVE9", "CONTACT_CENTER_INTEGRATION")
PERSONAS = ("UNKNOWN", "CONCISE", "CHATTY")


def _version_of(text: str, app: AppName, field: str) -> str | None:
    """The version ID ``text`` names in ``app``, or None for the draft (``…/versions/-``)."""
    if text == f"{app}/versions/{DRAFT_ID}":
        return None
    version = AppVersionName.parse(text, field)
    if version.app_name != app:
        raise InvalidArgument(f"{field}: {text[:300]} is not a version of {app}")
    return version.id


def check_deployment(deployment: Deployment, name: AppChildName, parts: AppParts) -> Deployment:
    """INVALID_ARGUMENT unless the deployment names an existing version of its own app and its profile holds
    known values."""
    if not deployment.display_name or not deployment.display_name.strip():
        raise InvalidArgument("deployment.displayName is required")
    if not deployment.app_version:
        raise InvalidArgument("deployment.appVersion is required: an app version of this app, or …/versions/- "
                              "for the draft")
    version = _version_of(deployment.app_version, name.app_name, "deployment.appVersion")
    if version is not None and not parts.exists(AppVersionName.collection, version):
        raise InvalidArgument(f"deployment.appVersion: app version {deployment.app_version} does not exist")
    profile = deployment.channel_profile
    if profile is not None:
        _check_profile(profile)
    return deployment


def _check_profile(profile: ChannelProfile) -> None:
    where = "deployment.channelProfile"
    if profile.channel_type is not None and profile.channel_type not in CHANNEL_TYPES:
        raise InvalidArgument(f"{where}.channelType must be one of {', '.join(CHANNEL_TYPES)}")
    persona = profile.persona_property.persona if profile.persona_property else None
    if persona is not None and persona not in PERSONAS:
        raise InvalidArgument(f"{where}.personaProperty.persona must be one of {', '.join(PERSONAS)}")
    level = profile.noise_suppression_level
    if level is not None and level not in NOISE_SUPPRESSION_LEVELS:
        raise InvalidArgument(f"{where}.noiseSuppressionLevel must be one of {', '.join(NOISE_SUPPRESSION_LEVELS)}")
    widget = profile.web_widget_config
    for field, value in (("webWidgetConfig.modality", widget.modality if widget else None),
                         ("webWidgetConfig.theme", widget.theme if widget else None)):
        if value is not None and not ENUM_NAME.fullmatch(value):
            raise InvalidArgument(f"{where}.{field} must be an enum name such as CHAT_AND_VOICE or DARK")
    for field, text in (("profileId", profile.profile_id),
                        ("webWidgetConfig.webWidgetTitle", widget.web_widget_title if widget else None)):
        if text is not None and len(text) > DISPLAY_NAME_CHARACTERS:
            raise InvalidArgument(f"{where}.{field} is longer than {DISPLAY_NAME_CHARACTERS} characters "
                                  "(ces.display_name)")


_DEPLOYMENT_BODY = select(definitions.c.body).where(
    definitions.c.app_pk == bindparam("app_pk"), definitions.c.collection == DeploymentName.collection,
    definitions.c.resource_id == bindparam("resource_id"))
_VERSION_EXISTS = select(definitions.c.id).where(
    definitions.c.app_pk == bindparam("app_pk"), definitions.c.collection == AppVersionName.collection,
    definitions.c.resource_id == bindparam("resource_id"))
"""Built once: a session started through a deployment reads both."""


def resolve_deployment(connection: Connection, app_pk: int, app: AppName, text: str) -> str:
    """The app version a new session started through deployment ``text`` runs ("" for the draft), read in the
    caller's transaction. NOT_FOUND for a deployment that does not exist; FAILED_PRECONDITION for one whose
    version was deleted since it was written."""
    name = DeploymentName.parse(text, "config.deployment")
    if name.app_name != app:
        raise InvalidArgument(f"config.deployment: {text[:300]} is not a deployment of {app}")
    body = connection.scalar(_DEPLOYMENT_BODY, {"app_pk": app_pk, "resource_id": name.id})
    if body is None:
        raise NotFound(f"deployment {name} does not exist")
    version_text = Deployment.model_validate(body).app_version or ""
    version = _version_of(version_text, app, "deployment.appVersion")
    if version is None:
        return ""
    if connection.scalar(_VERSION_EXISTS, {"app_pk": app_pk, "resource_id": version}) is None:
        raise FailedPrecondition(f"deployment {name} names app version {version_text}, which no longer exists; "
                                 "point it at another version with update_deployment")
    return version_text
