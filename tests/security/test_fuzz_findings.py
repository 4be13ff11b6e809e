"""What the fuzz of every tool (test_fuzz.py) found, each kept as a plain regression test with the minimal input."""

from __future__ import annotations

import pytest

from convener.api.errors import InvalidArgument
from convener.ces.runtime.openapi import parse_operation
from tests.security.fuzzing import LEAK


@pytest.mark.parametrize("text", ["\x05", "openapi: 3.0.0\npaths: {}\n\x93", "\U0010743e\x05"])
def test_a_control_character_in_an_openapi_schema_is_named_not_its_exception(text: str) -> None:
    # update_tool with openApiTool.openApiSchema holding a control character answered
    # "INVALID_ARGUMENT: tool.openApiTool.openApiSchema is neither JSON nor YAML: ReaderError".
    with pytest.raises(InvalidArgument) as raised:
        parse_operation(text, name=None, url=None, field="tool.openApiTool.openApiSchema")

    assert "is not valid YAML: character U+" in raised.value.message
    assert "is not allowed in YAML" in raised.value.message
    assert not LEAK.search(str(raised.value)), str(raised.value)
