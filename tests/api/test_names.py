"""Resource names: parse, format, parent and ID of the ces names, and the errors of malformed ones."""

from __future__ import annotations

from typing import Any

import pytest

from convener.api.errors import Code, InvalidArgument
from convener.api.names import LocationName, ProjectName, check_id
from convener.ces.names import AppName, ConversationName

APP_TEMPLATE = "projects/{project}/locations/{location}/apps/{app}"
CONVERSATION_TEMPLATE = APP_TEMPLATE + "/conversations/{conversation}"


def test_an_app_name_parses_into_its_variables_and_formats_back() -> None:
    name = AppName.parse("projects/my-project/locations/us-central1/apps/app_1")
    assert name == AppName("my-project", "us-central1", "app_1")
    assert (name.project, name.location, name.app) == ("my-project", "us-central1", "app_1")
    assert str(name) == "projects/my-project/locations/us-central1/apps/app_1"
    assert name.id == "app_1"


def test_an_app_names_parent_is_its_location_and_that_ones_is_the_project() -> None:
    name = AppName.parse("projects/p/locations/l/apps/a")
    assert name.parent == LocationName("p", "l")
    assert str(name.parent) == "projects/p/locations/l"
    assert name.parent.parent == ProjectName("p")
    assert str(name.parent.parent) == "projects/p"
    with pytest.raises(TypeError):
        _ = ProjectName("p").parent


def test_a_conversation_name_parses_and_knows_its_app() -> None:
    text = "projects/p/locations/global/apps/a/conversations/c-1"
    name = ConversationName.parse(text)
    assert name == ConversationName("p", "global", "a", "c-1")
    assert str(name) == text
    assert name.id == "c-1"
    assert name.parent == AppName("p", "global", "a")
    assert name.app_name == AppName("p", "global", "a")
    assert AppName("p", "global", "a").conversation("c-1") == name


def test_names_are_values() -> None:
    a = AppName.parse("projects/p/locations/l/apps/a")
    assert a == AppName("p", "l", "a")
    assert hash(a) == hash(AppName("p", "l", "a"))
    assert a != AppName("p", "l", "b")
    assert len({a, AppName("p", "l", "a"), AppName("p", "l", "b")}) == 2
    with pytest.raises(AttributeError):
        a.app = "b"  # type: ignore[misc]


@pytest.mark.parametrize(
    "resource_id",
    ["a", "A", "0", "7abc", "a.b_c~d-e", "UPPER-lower.1", "x" * 128, "a--", "a..", "a~"],
)
def test_ids_of_safe_characters_are_accepted(resource_id: str) -> None:
    text = f"projects/p/locations/l/apps/a/conversations/{resource_id}"
    assert ConversationName.parse(text).id == resource_id
    assert check_id(resource_id, "id") == resource_id


@pytest.mark.parametrize(
    "text",
    [
        "projects/p/locations/l",
        "projects/p/locations/l/apps",
        "projects/p/locations/l/apps/a/",
        "/projects/p/locations/l/apps/a",
        "projects/p/locations/l/apps/a/conversations/c",
        "projects/p/regions/l/apps/a",
        "Projects/p/locations/l/apps/a",
        "projects/p/locations/l/app/a",
        "apps/a",
        "a",
        "projects/p//locations/l/apps/a",
        "https://ces.googleapis.com/projects/p/locations/l/apps/a",
    ],
)
def test_names_of_the_wrong_shape_name_the_expected_format(text: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        AppName.parse(text)
    assert caught.value.code is Code.INVALID_ARGUMENT
    assert APP_TEMPLATE in caught.value.message
    assert caught.value.message.startswith('name "')


@pytest.mark.parametrize("text", ["", None, 5, ["projects/p"], {"name": "x"}])
def test_a_missing_name_is_required_in_the_expected_format(text: Any) -> None:
    with pytest.raises(InvalidArgument) as caught:
        ConversationName.parse(text)
    assert caught.value.message == f"name is required, in the format {CONVERSATION_TEMPLATE}"


def test_the_error_names_the_field_that_was_given() -> None:
    with pytest.raises(InvalidArgument) as caught:
        AppName.parse("nope", "parent")
    assert caught.value.message == f'parent "nope" does not match the format {APP_TEMPLATE}'
    with pytest.raises(InvalidArgument) as caught:
        LocationName.parse(None, "parent")
    assert caught.value.message == "parent is required, in the format projects/{project}/locations/{location}"


@pytest.mark.parametrize(
    ("resource_id", "segment"),
    [
        ("", "app"),
        ("-a", "app"),
        (".a", "app"),
        ("_a", "app"),
        ("~a", "app"),
        ("a b", "app"),
        ("a%2Fb", "app"),
        ("a?b", "app"),
        ("a#b", "app"),
        ("a:b", "app"),
        ("café", "app"),
        ("a\tb", "app"),
        ("x" * 129, "app"),
    ],
)
def test_ids_outside_the_safe_alphabet_are_rejected_naming_the_segment(resource_id: str, segment: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        AppName.parse(f"projects/p/locations/l/apps/{resource_id}")
    message = caught.value.message
    assert message.startswith(f"name: {segment} ")
    assert "must be 1 to 128 letters, digits" in message
    assert "starting with a letter or digit" in message


@pytest.mark.parametrize("segment", ["project", "location", "app", "conversation"])
def test_every_variable_of_a_name_is_checked(segment: str) -> None:
    values = {"project": "p", "location": "l", "app": "a", "conversation": "c"} | {segment: "bad id"}
    with pytest.raises(InvalidArgument) as caught:
        ConversationName.parse(CONVERSATION_TEMPLATE.format(**values), "conversation.name")
    assert caught.value.message.startswith(f'conversation.name: {segment} "bad id" must be')


def test_very_long_names_are_rejected_without_echoing_them() -> None:
    with pytest.raises(InvalidArgument) as caught:
        AppName.parse("projects/p/locations/l/apps/" + "a" * 2000)
    assert caught.value.message == "name is longer than 1024 characters"
    with pytest.raises(InvalidArgument) as caught:
        AppName.parse("x" * 1000)
    assert len(caught.value.message) < 200
    with pytest.raises(InvalidArgument) as caught:
        AppName.parse("projects/p/locations/l/apps/" + "-" * 500)
    assert len(caught.value.message) < 300


def test_parse_of_str_is_the_identity() -> None:
    name = ConversationName("p.1", "l~2", "A-3", "c_4")
    assert ConversationName.parse(str(name)) == name


@pytest.mark.parametrize("text", ["projects/p/locations/l/apps/a\n", "projects/p\n/locations/l/apps/a"])
def test_an_id_ending_in_a_newline_is_rejected(text: str) -> None:
    with pytest.raises(InvalidArgument):
        AppName.parse(text)
