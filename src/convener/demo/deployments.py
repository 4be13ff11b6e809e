"""The demo app's ``web`` deployment: the chat widget on Acme's site, pinned to the app version ``v1``.

Scripts marked ``deployment: web`` come through it, so their conversations record the deployment and the
version it chose. Loading again changes nothing that is in place: the version is made once (a snapshot of the
app as ``app.yaml`` had it then), and the deployment is written only when missing.
"""

from __future__ import annotations

from convener.api.errors import NotFound
from convener.auth.caller import LOCAL_USER
from convener.ces.definitions import AppVersion
from convener.ces.deployments import ChannelProfile, Deployment, WebWidgetConfig
from convener.ces.names import AppName, AppVersionName, DeploymentName
from convener.services import Services

VERSION_ID = "v1"
DEPLOYMENT_ID = "web"


def deployment_name(app: AppName) -> str:
    return str(app.child(DeploymentName, DEPLOYMENT_ID))


def install_deployment(services: Services, app: AppName) -> None:
    """Make the version ``v1`` and the deployment ``web`` serving it, unless they exist."""
    runtime = services.runtime
    version = str(app.child(AppVersionName, VERSION_ID))
    try:
        runtime.versions.versions.get(version, LOCAL_USER)
    except NotFound:
        runtime.versions.create(str(app), VERSION_ID, AppVersion(
            display_name="v1", description="The Acme Support app as first published on the website."), LOCAL_USER)
    try:
        runtime.deployments.get(deployment_name(app), LOCAL_USER)
    except NotFound:
        runtime.deployments.create(str(app), DEPLOYMENT_ID, Deployment(
            display_name="Website chat", app_version=version,
            channel_profile=ChannelProfile(channel_type="WEB_UI", web_widget_config=WebWidgetConfig(
                modality="CHAT_ONLY", theme="LIGHT", web_widget_title="Acme Support"))), LOCAL_USER)
