"""The demo workspace: Acme Support, a runnable customer-service app, and conversations recorded from it.

``app.yaml`` defines the app (projects/demo/locations/global/apps/support) in the format of
export_app: a triage agent and two specialists, all playbook agents that need no model, python tools
over the bundled ``orders.json`` (``tools``) and one client tool. ``scripts.yaml`` holds scripted
customers; ``load_demo`` imports the app and plays every script through run_session, so each demo
conversation is a real recording of the runtime. Talk to the app yourself with ``convener chat``.

``slack_export/`` is the Slack workspace of the team behind the app; ``chat`` imports it (with one private
message no Slack export can hold) and issues keys for two of its people, ana and ben, to try the chat tools.
"""

from __future__ import annotations

from convener.demo.loader import APP, load_demo

__all__ = ["APP", "load_demo"]
