"""The demo's documentation: Convener's own ``docs/``, so the demo answers questions about Convener.

The folder is found beside the package in a source checkout (how ``make demo`` runs); an installed wheel
has no docs folder, and the demo says how to ingest yours instead.
"""

from __future__ import annotations

from pathlib import Path

import convener
from convener.knowledge.ingest import IngestPlan
from convener.services import Services

DATA_SOURCE = "convener-docs"


def docs_folder() -> Path | None:
    folder = Path(convener.__file__).resolve().parents[2] / "docs"
    return folder if (folder / "ARCHITECTURE.md").is_file() else None


def install_knowledge(services: Services) -> str:
    folder = docs_folder()
    if folder is None:
        return ("knowledge: no docs folder beside the package (not a source checkout); "
                "ingest yours with `convener knowledge ingest PATH`")
    summary = services.knowledge.ingest(IngestPlan.make(folder, data_source=DATA_SOURCE))
    return (f"knowledge: {DATA_SOURCE} from {folder}: {summary.added} added, {summary.updated} updated, "
            f"{summary.unchanged} unchanged; try answer_query \"How do I import a Slack export?\"")
