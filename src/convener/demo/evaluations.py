"""The demo's evaluations and one completed run of each of their datasets: golden evaluations
(``evaluations.yaml``) and scenario evaluations with their personas (``scenarios.yaml``).

Idempotent like the rest of the demo: an evaluation is written only when missing or changed, and the
dataset is run only when no run of it has completed, so loading again finds the results in place.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

import yaml

from convener.api.errors import NotFound
from convener.auth.caller import LOCAL_USER
from convener.ces.evaluation.models import (
    Evaluation,
    EvaluationDataset,
    EvaluationPersona,
    EvaluationRunState,
)
from convener.ces.evaluation.requests import ListEvaluationRunsRequest, RunEvaluationRequest
from convener.ces.names import AppName, EvaluationDatasetName, EvaluationName, EvaluationPersonaName
from convener.services import Services

RUN_TIMEOUT = "300s"


def _absolute(value: Any, app: AppName) -> Any:
    """``tools/x`` and ``agents/x`` in the file become full names under the app."""
    if isinstance(value, dict):
        return {key: _absolute(item, app) for key, item in value.items()}
    if isinstance(value, list):
        return [_absolute(item, app) for item in value]
    if isinstance(value, str) and value.startswith(("tools/", "agents/", "toolsets/")):
        return f"{app}/{value}"
    return value


FILES = ("evaluations.yaml", "scenarios.yaml")
"""Each holds a dataset, its evaluations and the personas they use."""


def _document(file: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(resources.files(__package__).joinpath(file).read_text("utf-8"))
    return loaded


def definitions(app: AppName, file: str = FILES[0]) -> tuple[dict[str, Evaluation], tuple[str, str]]:
    """The evaluations of one file by ID, and its dataset's (ID, display name)."""
    document = _document(file)
    evaluations = {evaluation_id: Evaluation.model_validate(_absolute(body, app))
                   for evaluation_id, body in document["evaluations"].items()}
    return evaluations, (document["dataset"]["id"], document["dataset"]["displayName"])


def personas(file: str) -> dict[str, EvaluationPersona]:
    return {persona_id: EvaluationPersona.model_validate(body)
            for persona_id, body in (_document(file).get("personas") or {}).items()}


def _install_personas(services: Services, app: AppName, file: str) -> int:
    service = services.runtime.evaluations
    written = 0
    for persona_id, wanted in personas(file).items():
        name = str(app.child(EvaluationPersonaName, persona_id))
        try:
            stored = service.personas.get(name, LOCAL_USER)
        except NotFound:
            service.personas.create(str(app), persona_id, wanted, LOCAL_USER)
            written += 1
            continue
        if stored.model_copy(update={"name": None, "create_time": None, "update_time": None, "etag": None}) != wanted:
            service.personas.update(wanted.model_copy(update={"name": name}), None, LOCAL_USER)
            written += 1
    return written


def install_evaluations(services: Services, app: AppName, file: str = FILES[0]) -> int:
    """Create or bring up to date the evaluations, personas and dataset of one file; how many were written."""
    service = services.runtime.evaluations
    evaluations, (dataset_id, dataset_display) = definitions(app, file)
    written = _install_personas(services, app, file)
    for evaluation_id, wanted in evaluations.items():
        name = str(app.child(EvaluationName, evaluation_id))
        try:
            stored = service.evaluations.get(name, LOCAL_USER)
        except NotFound:
            service.create_evaluation(str(app), evaluation_id, wanted, LOCAL_USER)
            written += 1
            continue
        if stored.model_copy(update={"name": None, "create_time": None, "update_time": None, "etag": None,
                                     "created_by": None, "last_updated_by": None}) != wanted:
            service.update_evaluation(wanted.model_copy(update={"name": name}), None, LOCAL_USER)
            written += 1
    members = [str(app.child(EvaluationName, evaluation_id)) for evaluation_id in evaluations]
    dataset = EvaluationDataset(display_name=dataset_display, evaluations=members)
    dataset_name = str(app.child(EvaluationDatasetName, dataset_id))
    try:
        stored_dataset = service.datasets.get(dataset_name, LOCAL_USER)
        if stored_dataset.evaluations != members or stored_dataset.display_name != dataset_display:
            service.datasets.update(dataset.model_copy(update={"name": dataset_name}), None, LOCAL_USER)
            written += 1
    except NotFound:
        service.datasets.create(str(app), dataset_id, dataset, LOCAL_USER)
        written += 1
    return written


def run_once(services: Services, app: AppName, dataset_id: str) -> str | None:
    """Run the dataset and wait for it, unless a run of it already completed; the new run's name."""
    service = services.runtime.evaluations
    dataset_name = str(app.child(EvaluationDatasetName, dataset_id))
    runs, _ = service.list_runs(ListEvaluationRunsRequest(parent=str(app), page_size=500), LOCAL_USER)
    if any(run.evaluation_dataset == dataset_name and run.state == EvaluationRunState.COMPLETED for run in runs):
        return None
    operation = service.run(RunEvaluationRequest(app=str(app), evaluation_dataset=dataset_name,
                                                 display_name=f"Demo {dataset_id} run"), LOCAL_USER)
    done = services.runtime.operations.wait(operation.name or "", RUN_TIMEOUT, LOCAL_USER)
    return str((done.metadata or {}).get("evaluationRun"))
