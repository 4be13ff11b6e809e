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

from typing import TYPE_CHECKING, Any

__all__ = ["APP", "load_demo"]

# The loader (and the chat, knowledge and analytics services it fills) is imported when first asked for, not
# with this package: the package is also the home of the demo's python tools, which every process that runs
# a python tool imports (``convener.outside.callables`` registers them), and which need none of it.
if TYPE_CHECKING:
    from convener.demo.loader import APP, load_demo
else:

    def __getattr__(name: str) -> Any:
        if name in __all__:
            from convener.demo import loader

            return getattr(loader, name)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
