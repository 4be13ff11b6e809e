"""The sandboxed template layer: values, errors, and the limits that keep hostile templates cheap."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from convener.api.errors import InvalidArgument
from convener.ces.runtime import templates
from convener.ces.runtime.templates import TemplateFailure, check_template, evaluate, render, render_value

CONTEXT: dict[str, Any] = {
    "slots": {"order_id": "AB-1234", "count": 3, "size": None},
    "variables": {"tier": "gold"},
    "results": {"order": {"output": {"status": "shipped", "items": [{"sku": "x", "qty": 2}], "total": 9.5}}},
    "input": {"text": "where is my order", "event": None},
}


@contextmanager
def quick(seconds: float = 2.0) -> Iterator[None]:
    """The block must finish well within ``seconds``: the limits exist to keep hostile templates cheap."""
    start = time.perf_counter()
    yield
    assert time.perf_counter() - start < seconds


def fails(text: str, context: dict[str, Any] | None = None) -> str:
    with quick(), pytest.raises(TemplateFailure) as caught:
        evaluate(text, CONTEXT if context is None else context)
    return caught.value.message


# -- values -------------------------------------------------------------------------------------------


def test_render_reads_slots_results_and_variables() -> None:
    text = "Order {{ slots.order_id }} is {{ results.order.output.status }} ({{ variables.tier }})."
    assert render(text, CONTEXT) == "Order AB-1234 is shipped (gold)."


def test_a_single_expression_keeps_its_type() -> None:
    assert evaluate("{{ slots.count }}", CONTEXT) == 3
    assert evaluate("  {{ slots.count * 2 }} ", CONTEXT) == 6
    assert evaluate("{{ results.order.output.total }}", CONTEXT) == 9.5
    assert evaluate("{{ results.order.output.items }}", CONTEXT) == [{"sku": "x", "qty": 2}]
    assert evaluate("{{ slots.size }}", CONTEXT) is None
    assert evaluate("{{ slots.count > 2 }}", CONTEXT) is True
    assert evaluate("{{ {'a': [1, (2, 3)]} }}", CONTEXT) == {"a": [1, [2, 3]]}
    assert evaluate("{{ range(3) }}", CONTEXT) == [0, 1, 2]
    assert evaluate("{{ ['a', 'b'] | map('upper') }}", CONTEXT) == ["A", "B"]


def test_text_around_an_expression_makes_a_string() -> None:
    assert evaluate("{{ slots.count }} items", CONTEXT) == "3 items"
    assert evaluate("{{ slots.count }}{{ slots.count }}", CONTEXT) == "33"
    assert evaluate("plain", CONTEXT) == "plain"
    assert templates.is_expression("{{ a }}") and not templates.is_expression("{{ a }} and {{ b }}")


def test_render_value_walks_dicts_and_lists() -> None:
    value = {
        "id": "{{ slots.order_id }}",
        "n": "{{ slots.count }}",
        "tags": ["{{ variables.tier }}", 7],
        "x": True,
    }
    assert render_value(value, CONTEXT) == {"id": "AB-1234", "n": 3, "tags": ["gold", 7], "x": True}


def test_dict_keys_win_over_methods() -> None:
    context = {"r": {"items": [1, 2], "keys": "k"}}
    assert evaluate("{{ r.items }}", context) == [1, 2]
    assert render("{{ r.keys }}", context) == "k"
    assert evaluate("{{ r.get('items') }}", context) == [1, 2]


def test_loops_namespace_and_common_filters_work() -> None:
    text = (
        "{% set ns = namespace(total=0) %}{% for item in results.order.output.items %}"
        "{{ loop.index }}:{{ item.sku | upper }}{% set ns.total = ns.total + item.qty %}{% endfor %} "
        "{{ ns.total }} {{ ['b', 'a'] | sort | join(',') }} {{ 'a-b' | replace('-', '+') }} {{ 9.5 | round }}"
    )
    assert render(text, CONTEXT) == "1:X 2 a,b a+b 10.0"


def test_is_defined_checks_without_failing() -> None:
    assert evaluate("{{ results.order.error is defined }}", CONTEXT) is False
    assert evaluate("{{ results.order.output is defined }}", CONTEXT) is True


# -- errors -------------------------------------------------------------------------------------------


def test_undefined_names_fail_with_a_readable_message() -> None:
    assert "'missing' is undefined" in fails("{{ missing }}")
    assert "has no attribute 'nope'" in fails("Status: {{ results.order.output.nope }}")
    with pytest.raises(TemplateFailure, match="has no attribute 'nope'"):
        render("{{ slots.nope.deeper }}", CONTEXT)


def test_runtime_errors_become_failures() -> None:
    assert "ZeroDivisionError" in fails("{{ 1 / 0 }}")
    assert "finite" in fails("{{ x | float }}", {"x": "nan"})
    assert "not JSON" in fails("{{ namespace() }}")
    assert "key that is not text" in fails("{{ {1: 2} }}")


def test_check_template_names_the_field_and_line() -> None:
    check_template("Hello {{ slots.name }}", "f")
    with pytest.raises(InvalidArgument, match=r"agent\.reply: bad template: .* \(line 2\)$"):
        check_template("ok\n{{ broken ", "agent.reply")
    with pytest.raises(InvalidArgument, match="No filter named 'nope'"):
        check_template("{{ x | nope }}", "f")
    with pytest.raises(InvalidArgument, match="at most 10000 characters"):
        check_template("x" * 10_001, "f")


@pytest.mark.parametrize(
    ("text", "refused"),
    [
        ("{% macro m() %}x{% endmacro %}", "macros"),
        ("{% block b %}x{% endblock %}", "blocks"),
        ("{% set x %}a{% endset %}", "{% set %} blocks"),
        ("{% filter upper %}a{% endfilter %}", "filter blocks"),
        ("{% include 'x' %}", "include"),
        ("{% import 'x' as y %}", "import"),
        ("{% extends 'x' %}", "extends"),
        ("{% for x in y recursive %}{{ loop(x) }}{% endfor %}", "recursive loops"),
        ("{{ x | random }}", "No filter named 'random'"),
        ("{{ x | center(9) }}", "No filter named 'center'"),
        ("{{ x | format(1) }}", "No filter named 'format'"),
        ("{{ x | batch(3) }}", "No filter named 'batch'"),
    ],
)
def test_constructs_that_escape_the_limits_are_refused(text: str, refused: str) -> None:
    with pytest.raises(InvalidArgument, match=refused):
        check_template(text, "f")


def test_render_of_an_unchecked_bad_template_fails_instead_of_raising_syntax_errors() -> None:
    with pytest.raises(TemplateFailure, match="bad template"):
        render("{{ oops", CONTEXT)


# -- the sandbox ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "{{ ''.__class__.__mro__ }}",
        "{{ ''.__class__ }}",
        "{{ ().__class__.__base__.__subclasses__() }}",
        "{{ slots.__init__ }}",
        "{{ range.__self__ }}",
        "{{ dict.__init__.__globals__ }}",
        "{{ 'x'.format }}",
        "{{ '{0.__class__}'.format(1) }}",
        "{{ slots.update({'a': 1}) }}",
        "{{ results.order.output.items.append(1) }}",
        "{{ 'x'.ljust(10) }}",
        "{{ lipsum() }}",
        "{{ cycler(1) }}",
        "{{ self }}",
    ],
)
def test_python_internals_stay_out_of_reach(text: str) -> None:
    message = fails(text)
    assert "<" not in message  # no object's repr (<class ...>, <function ...>) comes back


def test_internals_do_not_leak_through_render_either() -> None:
    with pytest.raises(TemplateFailure, match="unsafe"):
        render("{{ ''.__class__.__mro__[1].__subclasses__() }}", CONTEXT)


# -- limits -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "{{ 'a' * 10**9 }}",
        "{{ [1] * 10**9 }}",
        "{{ 10 ** (10 ** 10) }}",
        "{{ 2 ** 100000 }}",
        "{{ '%0999999999d' % 1 }}",
        "{{ '%*d' % (10**9, 1) }}",
        "{{ range(10**9) | list }}",
        "{{ ('x' * 60000) + ('y' * 60000) }}",
        "{{ ('ab' * 1000) | replace('', 'x' * 1000) }}",
        "{{ (['x' * 1000] * 99) | join('y' * 2000) }}",
        "{{ ['x' * 60000, 'y' * 60000] }}",
        "{{ ([1] * 40000) | string }}",
        "{{ ([1] * 40000) | tojson }}",
    ],
)
def test_values_cannot_grow_past_the_cap(text: str) -> None:
    assert fails(text)


def test_doubling_with_concatenation_stops_at_the_cap() -> None:
    text = "{% set s = 'x' * 1000 %}" + "{% set s = s ~ s %}" * 40 + "{{ s | length }}"
    check_template(text, "f")
    assert "longer than" in fails(text)


def test_nested_loops_run_out_of_budget() -> None:
    text = "{% for i in range(10000) %}{% for j in range(10000) %}{% endfor %}{% endfor %}"
    assert "too much work" in fails(text)


def test_output_is_capped() -> None:
    with quick(), pytest.raises(TemplateFailure, match="longer than 100000"):
        render("{% for i in range(5000) %}{{ 'x' * 30 }}{% endfor %}", CONTEXT)
    with quick(), pytest.raises(TemplateFailure, match="longer than"):
        render("{{ big }}{{ big }}", {"big": "y" * 60_000})


def test_printing_a_huge_input_value_is_refused_before_it_is_turned_into_text() -> None:
    huge = {"rows": [{"n": n} for n in range(100_000)]}
    with quick(), pytest.raises(TemplateFailure, match="longer than"):
        render("{{ rows }}", huge)


def test_the_budget_is_per_render() -> None:
    text = "{% for i in range(9000) %}{% endfor %}ok"
    for _ in range(30):  # 270,000 iterations in all: more than one budget, fine when each render has its own
        assert render(text, CONTEXT) == "ok"


def test_ordinary_templates_are_fast() -> None:
    text = "{% for item in results.order.output.items %}{{ item.sku }} x{{ item.qty }}{% endfor %}"
    with quick(0.5):
        for _ in range(2000):
            render(text, CONTEXT)
