"""Sandboxed Jinja2 templates for declarative agents.

App authors write these templates and end users (through their messages) and tools (through their
responses) supply the data they run on, so a template must neither reach Python internals nor take
the server down. Jinja's ``SandboxedEnvironment`` closes the first door; this module closes the
second with limits the sandbox lacks:

* the output and every value a template builds (strings, lists, dicts) stay under ``MAX_OUTPUT``
  characters: ``*``, ``+``, ``%``, ``**`` and ``~`` are checked before they run, as are ``join``,
  ``replace`` and ``string``; container literals and printed values are measured first;
* every render has a work budget, spent by loop iterations, calls and filters (more for long
  strings and lists), so nested loops cannot spin;
* methods of built-in types are limited to a read-only, non-padding list (no ``format``, ``ljust``,
  ``join``...), risky filters (``center``, ``indent``, ``format``, ``random``, ``batch``...) are
  gone, and macros, blocks, includes, ``{% set %}`` blocks, filter blocks and recursive loops are
  refused when the template is compiled: they buffer output where the cap cannot see it.

A dict's keys win over its methods (``results.order.items`` is the tool's ``items``, not
``dict.items``): templates read JSON data, and a key that Python happens to name a method should
still be reachable with a dot.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from typing import Any

from jinja2 import StrictUndefined, TemplateSyntaxError, Undefined, nodes, pass_context
from jinja2.environment import Template, TemplateExpression
from jinja2.exceptions import SecurityError
from jinja2.parser import Parser
from jinja2.runtime import Context
from jinja2.sandbox import SandboxedEnvironment
from jinja2.utils import Namespace
from jinja2.visitor import NodeTransformer
from markupsafe import Markup

from convener.api.errors import InvalidArgument

MAX_TEMPLATE_LENGTH = 10_000
"""Characters in one template's source."""
MAX_OUTPUT = 100_000
"""Characters a render may produce, and the size of any value a template builds."""
MAX_WORK = 200_000
"""Work units per render: one per loop iteration, call or filter, plus one per 256 characters or
items the call or filter is handed."""
MAX_RANGE = 10_000
"""Items ``range()`` may produce."""
MAX_INT_BITS = 10_000
"""Bits of an integer that ``*`` or ``**`` may produce."""
MAX_DEPTH = 100
"""Nesting of a value a template returns."""


class TemplateFailure(Exception):
    """A template that failed while rendering; ``message`` says why and is safe to log or show."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# ---------------------------------------------------------------------------------------------------
# The work budget. A ContextVar, because the hooks that spend it (filters, the sandbox's call and
# operator hooks) are shared by every render while each render needs its own count.


class _Budget:
    __slots__ = ("left",)

    def __init__(self, units: int) -> None:
        self.left = units


_BUDGET: ContextVar[_Budget | None] = ContextVar("convener_template_budget", default=None)


def _spend(units: int) -> None:
    budget = _BUDGET.get()
    if budget is None:  # compile-time constant folding: only constants, bounded by the source
        return
    budget.left -= units
    if budget.left < 0:
        raise SecurityError("the template does too much work")


def _cost(value: Any) -> int:
    """Work units for handing ``value`` to a call or filter: long texts and lists cost more."""
    if isinstance(value, (str, list, tuple, dict)):
        return len(value) // 256
    return 0


def _size(value: Any, limit: int = MAX_OUTPUT) -> int:
    """Roughly how many characters ``str(value)`` has, counting no further than just past ``limit``.

    Iterative, so a deeply nested value cannot exhaust the stack, and stops early, so measuring a
    huge value costs no more than measuring one just over the limit.
    """
    total = 0
    visited = 0
    stack = [value]
    while stack:
        item = stack.pop()
        visited += 1
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, range):
            total += 2 + 6 * len(item)
        elif isinstance(item, (list, tuple)):
            total += 2 + 2 * len(item)
            if total <= limit:
                stack.extend(item)
        elif isinstance(item, dict):
            total += 2 + 4 * len(item)
            if total <= limit:
                stack.extend(item.keys())
                stack.extend(item.values())
        elif isinstance(item, int):
            total += 1 + item.bit_length() // 3
        else:
            total += 8
        if total > limit:
            break
    _spend(visited // 64)
    return total


def _check_size(value: Any, what: str) -> Any:
    if _size(value) > MAX_OUTPUT:
        raise SecurityError(f"{what} would be longer than {MAX_OUTPUT} characters")
    return value


# ---------------------------------------------------------------------------------------------------
# Filters: a vetted subset of Jinja's, each metered, some guarded.

_KEPT_FILTERS = (
    "abs attr capitalize count d default dictsort filesizeformat first float groupby int items "
    "join last length list lower map max min reject rejectattr replace reverse round select "
    "selectattr sort string striptags sum title tojson trim truncate unique upper urlencode wordcount"
).split()


def _metered(function: Callable[..., Any]) -> Callable[..., Any]:
    """The filter, charging the budget before it runs (``wraps`` keeps Jinja's pass_context marks)."""

    @functools.wraps(function)
    def filter_(*args: Any, **kwargs: Any) -> Any:
        _spend(1 + sum(_cost(arg) for arg in args) + sum(_cost(arg) for arg in kwargs.values()))
        return function(*args, **kwargs)

    return filter_


def _guarded_join(join: Callable[..., str]) -> Callable[..., str]:
    @functools.wraps(join)
    def filter_(eval_ctx: Any, value: Iterable[Any], d: str = "", attribute: Any = None) -> str:
        items = []
        for item in value:
            _spend(1)
            items.append(item)
            if len(items) > MAX_OUTPUT:
                raise SecurityError(f"join would be longer than {MAX_OUTPUT} characters")
        separators = max(0, len(items) - 1) * len(str(d))
        if _size(items) - 2 * len(items) + separators > MAX_OUTPUT:
            raise SecurityError(f"join would be longer than {MAX_OUTPUT} characters")
        return join(eval_ctx, items, d, attribute)

    return filter_


def _guarded_replace(replace: Callable[..., str]) -> Callable[..., str]:
    @functools.wraps(replace)
    def filter_(eval_ctx: Any, s: Any, old: Any, new: Any, count: int | None = None) -> str:
        text, old_text, new_text = str(s), str(old), str(new)
        hits = len(text) + 1 if old_text == "" else text.count(old_text)
        if count is not None and count >= 0:
            hits = min(hits, count)
        if len(text) + hits * max(0, len(new_text) - len(old_text)) > MAX_OUTPUT:
            raise SecurityError(f"replace would be longer than {MAX_OUTPUT} characters")
        return replace(eval_ctx, s, old, new, count)

    return filter_


def _guarded_measure(function: Callable[..., Any], what: str, position: int) -> Callable[..., Any]:
    """For filters that turn their whole input (argument ``position``) into text: ``string``, ``tojson``."""

    @functools.wraps(function)
    def filter_(*args: Any, **kwargs: Any) -> Any:
        _check_size(args[position], what)
        return function(*args, **kwargs)

    return filter_


@pass_context
def _tick_iter(context: Context, iterable: Any) -> Iterator[Any]:
    """Wrapped around every for-loop's iterable: each iteration spends one unit."""
    for item in iterable:
        _spend(1)
        yield item


@pass_context
def _concat(context: Context, parts: list[Any]) -> str:
    """The ``~`` operator, measured before it joins."""
    if _size(parts) > MAX_OUTPUT:
        raise SecurityError(f"~ would be longer than {MAX_OUTPUT} characters")
    return "".join(str(part) for part in parts)


@pass_context
def _sized(context: Context, value: Any) -> Any:
    """Wrapped around list, tuple and dict literals: no value larger than the output cap."""
    return _check_size(value, "a literal")


def _range(*args: int) -> range:
    numbers = range(*args)
    if len(numbers) > MAX_RANGE:
        raise SecurityError(f"range() may produce at most {MAX_RANGE} numbers")
    _spend(len(numbers) // 256)
    return numbers


# Read-only methods that cannot pad or multiply their receiver.
_ALLOWED_METHODS: dict[type, frozenset[str]] = {
    str: frozenset(
        "capitalize casefold count endswith find index isalnum isalpha isdecimal isdigit islower "
        "isnumeric isspace istitle isupper lower lstrip partition removeprefix removesuffix rfind "
        "rindex rpartition rsplit rstrip split splitlines startswith strip swapcase title upper".split()
    ),
    dict: frozenset({"get", "keys", "values", "items"}),
    list: frozenset({"count", "index"}),
    tuple: frozenset({"count", "index"}),
    int: frozenset({"bit_length"}),
    float: frozenset({"is_integer"}),
    bool: frozenset(),
}


def _check_format(template: str) -> None:
    """Refuse ``%`` formats whose width or precision would pad a value to a huge size."""
    for match in re.finditer(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?", template):
        for number in match.groups():
            if number == "*" or (number is not None and int(number) > 1000):
                raise SecurityError("% format widths above 1000 are not allowed")


class _Environment(SandboxedEnvironment):
    """The sandbox with the limits described in the module docstring."""

    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        if not super().is_safe_attribute(obj, attr, value):
            return False
        if callable(value):
            for kind, allowed in _ALLOWED_METHODS.items():
                if isinstance(obj, kind):
                    return attr in allowed
        return True

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        # str.format pads without limit ("{:>999999999}"); it is not on the allowed list either.
        return None

    def getattr(self, obj: Any, attribute: str) -> Any:
        if isinstance(obj, Mapping) and attribute in obj:
            return obj[attribute]
        return super().getattr(obj, attribute)

    def call(self, context: Context, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        receiver = getattr(obj, "__self__", None)
        _spend(1 + _cost(receiver) + sum(_cost(arg) for arg in args) + sum(_cost(v) for v in kwargs.values()))
        return super().call(context, obj, *args, **kwargs)

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        _spend(1)
        if operator == "*":
            for sequence, times in ((left, right), (right, left)):
                if isinstance(sequence, (str, list, tuple)) and isinstance(times, int):
                    if times > 0 and _size(sequence) * times > MAX_OUTPUT:
                        raise SecurityError(f"* would make a value longer than {MAX_OUTPUT} characters")
            if _is_int(left) and _is_int(right) and left.bit_length() + right.bit_length() > MAX_INT_BITS:
                raise SecurityError("* would make too large a number")
        elif operator == "**":
            if _is_int(left) and _is_int(right) and right > 0 and abs(left) > 1:
                if left.bit_length() * right > MAX_INT_BITS:
                    raise SecurityError("** would make too large a number")
        elif operator == "+":
            if isinstance(left, (str, list, tuple)) and isinstance(right, (str, list, tuple)):
                if _size(left) + _size(right) > MAX_OUTPUT:
                    raise SecurityError(f"+ would make a value longer than {MAX_OUTPUT} characters")
        elif operator == "%" and isinstance(left, str):
            _check_format(left)
            if len(left) + _size(right) > MAX_OUTPUT:
                raise SecurityError(f"% would make a value longer than {MAX_OUTPUT} characters")
        return super().call_binop(context, operator, left, right)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _finalize(value: Any) -> Any:
    """Every ``{{ }}`` output passes here before ``str()``: measure it first."""
    return _check_size(value, "the value")


def _build_environment() -> _Environment:
    env = _Environment(
        undefined=StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=_finalize,
    )
    filters = {name: env.filters[name] for name in _KEPT_FILTERS}
    filters["join"] = _guarded_join(filters["join"])
    filters["replace"] = _guarded_replace(filters["replace"])
    filters["string"] = _guarded_measure(filters["string"], "string", 0)
    filters["tojson"] = _guarded_measure(filters["tojson"], "tojson", 1)  # after the eval context
    env.filters.clear()
    env.filters.update({name: _metered(function) for name, function in filters.items()})
    env.filters.update({"_convener_tick": _tick_iter, "_convener_concat": _concat, "_convener_sized": _sized})
    env.globals.clear()
    env.globals.update({"range": _range, "dict": dict, "namespace": Namespace})
    return env


_ENV = _build_environment()

_REFUSED: dict[type[nodes.Node], str] = {
    nodes.Macro: "macros",
    nodes.CallBlock: "call blocks",
    nodes.AssignBlock: "{% set %} blocks",
    nodes.FilterBlock: "filter blocks",
    nodes.Block: "blocks",
    nodes.Extends: "extends",
    nodes.Include: "include",
    nodes.Import: "import",
    nodes.FromImport: "import",
}


class _Guard(NodeTransformer):
    """Rewrites a parsed template so the limits apply, and refuses what would escape them."""

    def generic_visit(self, node: nodes.Node, *args: Any, **kwargs: Any) -> nodes.Node:
        for kind, what in _REFUSED.items():
            if isinstance(node, kind):
                raise TemplateSyntaxError(f"{what} are not supported", node.lineno)
        return super().generic_visit(node, *args, **kwargs)

    def visit_For(self, node: nodes.For) -> nodes.Node:
        if node.recursive:
            raise TemplateSyntaxError("recursive loops are not supported", node.lineno)
        self.generic_visit(node)
        node.iter = _filter(node.iter, "_convener_tick")
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        self.generic_visit(node)
        return _filter(nodes.List(node.nodes, lineno=node.lineno), "_convener_concat")

    def visit_List(self, node: nodes.List) -> nodes.Node:
        self.generic_visit(node)
        return _filter(node, "_convener_sized")

    def visit_Dict(self, node: nodes.Dict) -> nodes.Node:
        self.generic_visit(node)
        return _filter(node, "_convener_sized")

    def visit_Tuple(self, node: nodes.Tuple) -> nodes.Node:
        self.generic_visit(node)
        return node if node.ctx != "load" else _filter(node, "_convener_sized")


def _filter(node: nodes.Node, name: str) -> nodes.Filter:
    return nodes.Filter(node, name, [], [], None, None, lineno=node.lineno)


def _finish(tree: nodes.Template) -> Template:
    guarded = _Guard().visit(tree)
    assert isinstance(guarded, nodes.Template)
    guarded.set_environment(_ENV)
    template = _ENV.from_string(guarded)
    # Jinja keeps a template's globals as a ChainMap over the environment's, and walks it twice at every render
    # (a twentieth of a golden evaluation's CPU, playbooks evaluating many small expressions). Ours never change
    # once set (``_ENV``'s are set when it is made; a template adds none): a plain dict of the same is the same.
    template.globals = dict(template.globals)
    return template


@functools.lru_cache(maxsize=8192)
def _compile_template(text: str) -> Template:
    return _finish(_ENV.parse(text))


@functools.lru_cache(maxsize=8192)
def _compile_expression(source: str) -> TemplateExpression:
    parser = Parser(_ENV, source, state="variable")
    expression = parser.parse_expression()
    if not parser.stream.eos:
        raise TemplateSyntaxError("unexpected text after the expression", parser.stream.current.lineno)
    body: list[nodes.Node] = [nodes.Assign(nodes.Name("result", "store"), expression, lineno=1)]
    return TemplateExpression(_finish(nodes.Template(body, lineno=1)), False)


_SINGLE = re.compile(r"\A\s*\{\{-?(?P<expression>.*?)-?\}\}\s*\Z", re.DOTALL)


def single_expression(text: str) -> str | None:
    """The expression of a text that is exactly one ``{{ expression }}``, else None."""
    match = _SINGLE.match(text)
    if match is None:
        return None
    expression = match["expression"]
    if "{{" in expression or "}}" in expression or not expression.strip():
        return None
    return expression


# ---------------------------------------------------------------------------------------------------
# The public functions.


def check_template(text: str, field: str) -> None:
    """Compile ``text`` (caching it), or raise InvalidArgument naming ``field``."""
    if len(text) > MAX_TEMPLATE_LENGTH:
        raise InvalidArgument(f"{field}: a template may have at most {MAX_TEMPLATE_LENGTH} characters")
    try:
        _compile_template(text)
        expression = single_expression(text)
        if expression is not None:
            try:
                _compile_expression(expression)  # evaluate() uses this form; when it fails, it renders
            except TemplateSyntaxError:
                pass
    except TemplateSyntaxError as error:
        raise InvalidArgument(f"{field}: bad template: {error.message} (line {error.lineno})") from None
    except RecursionError:
        raise InvalidArgument(f"{field}: bad template: nested too deeply") from None


def is_expression(text: str) -> bool:
    """Whether ``evaluate`` reads ``text`` as one expression (and so returns its value, not text)."""
    expression = single_expression(text)
    if expression is None:
        return False
    try:
        _compile_expression(expression)
    except (TemplateSyntaxError, RecursionError):
        return False
    return True


def check_value(value: Any, field: str) -> None:
    """``check_template`` on every string inside ``value`` (dicts and lists, as ``render_value`` walks)."""
    if isinstance(value, str):
        check_template(value, field)
    elif isinstance(value, dict):
        for key, item in value.items():
            check_value(item, f"{field}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            check_value(item, f"{field}[{index}]")


def render(text: str, context: Mapping[str, Any]) -> str:
    """The template's output; TemplateFailure if it fails or grows past ``MAX_OUTPUT`` characters."""
    template = _compiled(_compile_template, text)
    token = _BUDGET.set(_Budget(MAX_WORK))
    try:
        parts: list[str] = []
        length = 0
        for chunk in template.generate(dict(context)):
            length += len(chunk)
            if length > MAX_OUTPUT:
                raise TemplateFailure(f"the output is longer than {MAX_OUTPUT} characters")
            parts.append(chunk)
        return "".join(parts)
    except TemplateFailure:
        raise
    except Exception as error:  # a template is the author's code: any failure of it is theirs, reported
        raise TemplateFailure(_describe(error)) from None
    finally:
        _BUDGET.reset(token)


def evaluate(text: str, context: Mapping[str, Any]) -> Any:
    """A text that is exactly one ``{{ expression }}`` gives the expression's JSON value (so numbers
    stay numbers and lists stay lists); any other text renders to a string."""
    expression = single_expression(text)
    if expression is None:
        return render(text, context)
    try:
        compiled = _compile_expression(expression)
    except TemplateSyntaxError:
        return render(text, context)
    token = _BUDGET.set(_Budget(MAX_WORK))
    try:
        return _jsonable(compiled(dict(context)), 0)
    except TemplateFailure:
        raise
    except Exception as error:  # as in render
        raise TemplateFailure(_describe(error)) from None
    finally:
        _BUDGET.reset(token)


def render_value(value: Any, context: Mapping[str, Any]) -> Any:
    """``evaluate`` on every string inside dicts and lists; other values are returned as they are."""
    if isinstance(value, str):
        return evaluate(value, context)
    if isinstance(value, dict):
        return {key: render_value(item, context) for key, item in value.items()}
    if isinstance(value, list):
        return [render_value(item, context) for item in value]
    return value


def _compiled(compile_: Callable[[str], Template], text: str) -> Template:
    try:
        return compile_(text)
    except TemplateSyntaxError as error:  # callers normally check first; a render must still not raise it
        raise TemplateFailure(f"bad template: {error.message} (line {error.lineno})") from None
    except RecursionError:
        raise TemplateFailure("bad template: nested too deeply") from None


def _jsonable(value: Any, depth: int) -> Any:
    """The value as JSON data: tuples, ranges and generators become lists; anything else not JSON fails."""
    if depth > MAX_DEPTH:
        raise TemplateFailure(f"the value is nested more than {MAX_DEPTH} levels deep")
    if isinstance(value, Undefined):
        str(value)  # StrictUndefined raises its own explanation (undefined name, unsafe attribute)
        raise TemplateFailure("the value is undefined")
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise TemplateFailure("the value is not a finite number")
        return value
    if isinstance(value, str):
        return str(value) if isinstance(value, Markup) else value
    if isinstance(value, dict):
        _check_size(value, "the value")
        result = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TemplateFailure(f"the value has a key that is not text: {type(key).__name__}")
            result[key] = _jsonable(item, depth + 1)
        return result
    if isinstance(value, (list, tuple, range)):
        _check_size(value, "the value")
        return [_jsonable(item, depth + 1) for item in value]
    if isinstance(value, Iterator):
        items = []
        for item in value:
            _spend(1)
            items.append(item)
        return _jsonable(items, depth)
    raise TemplateFailure(f"the value is not JSON data but a {type(value).__name__}")


def _describe(error: BaseException) -> str:
    if isinstance(error, RecursionError):
        return "the template recursed too deeply"
    if isinstance(error, SecurityError):
        message = f"not allowed: {error}"
    elif type(error).__name__ in ("UndefinedError", "TemplateRuntimeError", "TemplateError"):
        message = str(error)
    else:
        message = f"{type(error).__name__}: {error}"
    return message if len(message) <= 300 else message[:300] + "…"
