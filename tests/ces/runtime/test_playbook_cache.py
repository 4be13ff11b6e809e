"""A playbook agent's definition is compiled once: found again by the definition object a kept Blueprint hands
every turn, or by its content when an equal definition comes in another object."""

from __future__ import annotations

from convener.ces.definitions import PlaybookAgent
from convener.ces.runtime import kinds


def test_a_playbook_is_compiled_once_per_definition_and_found_by_the_object_first() -> None:
    definition = PlaybookAgent.model_validate({"fallback": [{"reply": "cache one"}]})
    first = kinds._playbook_of(definition)

    assert kinds._playbook_of(definition) is first
    assert kinds._playbook_of(PlaybookAgent.model_validate(definition.to_json())) is first, "an equal copy"
    changed = PlaybookAgent.model_validate({"fallback": [{"reply": "cache two"}]})
    assert kinds._playbook_of(changed) is not first


def test_the_objects_seen_are_bounded() -> None:
    for index in range(kinds._SEEN_SIZE + 5):
        kinds._playbook_of(PlaybookAgent.model_validate({"fallback": [{"reply": f"bounded {index % 3}"}]}))
    assert len(kinds._SEEN) <= kinds._SEEN_SIZE
