"""Vet SQL written by users or models before any engine runs it: one read-only query over known tables.

``check_select`` parses the text with sqlglot in the source's dialect and refuses, with an ``InvalidArgument``
that says what it found, anything but a single ``SELECT`` (or ``UNION``/``INTERSECT``/``EXCEPT``, with or
without ``WITH``). It walks the *whole* tree, because the dangerous parts hide below the top node:

* statements of any kind anywhere — a ``DELETE`` inside a PostgreSQL data-modifying CTE, ``SELECT … INTO``,
  ``FOR UPDATE``, and every statement sqlglot only knows as an opaque ``Command`` (``PRAGMA``, ``CALL``,
  ``LOAD``, ``VACUUM``, ``EXPLAIN ANALYZE`` …);
* tables outside the source's list (``allowed_tables``), including catalogs such as ``information_schema``,
  ``pg_catalog`` and ``sqlite_master``, and DuckDB's replacement scans of file paths (``FROM '/etc/passwd'``);
* table functions: *any* function in ``FROM`` position (``read_csv``, ``glob``, ``pg_ls_dir``,
  ``duckdb_settings()``…), since a table function reads something other than the source's tables; ``UNNEST``
  and ``VALUES`` are the only row sources allowed besides tables and subqueries;
* functions that touch files, the network, the server or its settings, or sequences, wherever they appear
  (``pg_read_file``, ``lo_import``, ``dblink``, ``set_config``, ``readfile``, ``load_extension``, ``getenv``,
  ``nextval``…), by a denylist of names and name prefixes.

This is defence in depth, not the only line: every engine also enforces read-only access itself (DuckDB
files opened read-only with external access disabled and the configuration locked, SQLite opened
``mode=ro`` with an authorizer, PostgreSQL in ``READ ONLY`` transactions that are always rolled back).
The denylist cannot know every extension's functions, which is why the engines must not rely on it.

The query the engine runs is sqlglot's *rendering* of the checked tree (without comments), never the
caller's text: a difference between how sqlglot and the engine read the text (a string escape, a comment
marker) then cannot smuggle in something the check did not see. The rendering is parsed and checked once
more before it is returned. The outer query gets a row cap of ``row_limit + 1`` rows (the extra row tells
the executor that the result was truncated); a smaller literal ``LIMIT`` already there is kept.

Table names match case-insensitively on the whole dotted name, with one convenience: the dialect's default
schema (``main`` for DuckDB and SQLite, ``public`` for PostgreSQL) may be written or left out on either
side, so ``main.cars`` matches ``cars`` and ``cars`` matches ``public.cars``. Any other qualifier must
match exactly: a bare ``t`` does not match ``sales.t`` (a search path could resolve it to another schema's
``t``), and ``sales.t`` does not match ``t``. Engines whose default schema is something else list both
spellings. References to CTEs defined by the query are not table references, but only where every engine
agrees that the name means the CTE: in the query body, in later CTEs of the same ``WITH``, or inside the
CTE itself when the ``WITH`` is ``RECURSIVE``. Anywhere else (e.g. a non-recursive CTE that names itself)
the name is treated as a table and must be allowed.

Limits: at most ``MAX_SQL_CHARS`` characters and ``MAX_SQL_NESTING`` levels of parentheses. The nesting is
counted by a linear scan before parsing, because sqlglot's parser is recursive: deeper input would only end in
a ``RecursionError`` after seconds of work (still caught, for a caller whose own stack is deep). Long flat
chains (``a + b + …``, many ``UNION``s) are fine.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers

from convener.api.errors import InvalidArgument
from convener.outside.limits import SQL_CHARACTERS, SQL_NESTING

MAX_SQL_CHARS = SQL_CHARACTERS
MAX_SQL_NESTING = SQL_NESTING
CAP_ALIAS = "_convener_capped"

# Quoted text and comments, whose parentheses do not nest; then the parentheses that do.
QUOTED_OR_COMMENT = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`[^`]*`|--[^\n]*|/\*.*?\*/", re.DOTALL)
PARENTHESES = re.compile(r"[()]")
LEADING_COMMENTS = re.compile(r"^(?:\s|--[^\n]*(?:\n|$)|/\*.*?\*/)*", re.DOTALL)
PARSER_BUGS = (KeyError, IndexError, TypeError, AttributeError, AssertionError)

DEFAULT_SCHEMAS = {"duckdb": "main", "sqlite": "main", "postgres": "public"}

# Schemas and name prefixes of system catalogs; refused even when ``allowed_tables`` is None.
SYSTEM_SCHEMAS = frozenset(
    {"information_schema", "pg_catalog", "pg_toast", "pg_temp", "temp", "sys", "mysql", "performance_schema"}
)
SYSTEM_TABLE_PREFIXES = ("pg_", "sqlite_", "duckdb_")
PATH_CHARACTERS = frozenset("/\\:~*?.")


def _classes(*names: str) -> tuple[type[exp.Expr], ...]:
    """The sqlglot classes of these names that this sqlglot version has (class names move between versions)."""
    found = (getattr(exp, name, None) for name in names)
    return tuple(cls for cls in found if isinstance(cls, type) and issubclass(cls, exp.Expr))


# Nodes that are statements, or clauses that make a SELECT write or lock, anywhere in the tree.
REFUSED_NODES = _classes(
    "Insert", "Update", "Delete", "Merge", "Copy", "Create", "Drop", "Alter", "AlterRename", "AlterSession",
    "AlterColumn", "AlterSet", "TruncateTable", "Into", "Command", "Transaction", "Commit", "Rollback", "Use",
    "Describe", "Show", "Summarize", "Pragma", "Set", "Attach", "Detach", "Install", "Grant", "Revoke",
    "Comment", "Analyze", "Refresh", "Cache", "Uncache", "LoadData", "Export", "Kill", "Execute",
    "ExecuteSql", "Declare", "Returning", "Lock", "LockingStatement", "Put", "Get", "Block", "IfBlock",
    "WhileBlock", "LoopBlock", "RepeatBlock", "StoredProcedure", "SwapTable", "Undrop", "MultitableInserts",
    "ConditionalInsert", "EndStatement", "Return", "OnConflict",
)
TOP_LEVEL = _classes("Select", "SetOperation")
EMPTY_STATEMENTS = _classes("Semicolon")  # What sqlglot makes of ``;;`` or a trailing comment.
ROW_SOURCES = _classes("Table", "Subquery", "Unnest", "Values", "Lateral")
LATERAL_SOURCES = _classes("Subquery", "Unnest")

REFUSED_FUNCTIONS = frozenset(
    {
        # DuckDB: files, other databases, settings, secrets, SQL in strings, database state.
        "glob", "sniff_csv", "httpfs", "getenv", "current_setting", "query", "query_table",
        "json_execute_serialized_sql", "load_aws_credentials", "which_secret", "checkpoint",
        "force_checkpoint", "enable_logging", "disable_logging", "arrow_scan", "pandas_scan", "pragma",
        "from_csv_auto",
        # PostgreSQL: files, large objects, other servers, settings, SQL in strings, sessions, sequences.
        "set_config", "dblink", "query_to_xml", "query_to_xmlschema", "query_to_xml_and_xmlschema",
        "cursor_to_xml", "cursor_to_xmlschema", "table_to_xml", "table_to_xmlschema",
        "table_to_xml_and_xmlschema", "schema_to_xml", "schema_to_xmlschema", "schema_to_xml_and_xmlschema",
        "database_to_xml", "database_to_xmlschema", "database_to_xml_and_xmlschema", "ts_stat", "ts_rewrite",
        "nextval", "setval", "currval", "lastval", "txid_current", "pg_current_xact_id", "pg_export_snapshot",
        "pg_terminate_backend", "pg_cancel_backend", "pg_reload_conf", "pg_rotate_logfile", "pg_notify",
        "pg_switch_wal", "pg_promote", "pg_log_backend_memory_contexts", "pg_import_system_collations",
        "loread", "lowrite", "pg_logdir_ls",
        # SQLite: extensions, files, internals.
        "load_extension", "readfile", "writefile", "edit", "fts3_tokenizer", "zipfile", "fsdir",
        "sqlar_compress", "sqlar_uncompress",
        # MySQL, SQL Server and others reached through SQLAlchemy.
        "load_file", "sleep", "benchmark", "get_lock", "release_lock", "release_all_locks", "sys_exec",
        "sys_eval", "openrowset", "opendatasource", "openquery", "openxml",
    }
)
REFUSED_FUNCTION_PREFIXES = (
    "read_", "parquet_", "iceberg_", "delta_", "sqlite_", "postgres_", "mysql_", "pragma_", "duckdb_",
    "pg_read_", "pg_ls_", "pg_stat_file", "pg_file_", "pg_sleep", "pg_advisory", "pg_try_advisory",
    "pg_logical_", "pg_replication_", "pg_create_", "pg_drop_", "pg_backup", "pg_start_backup",
    "pg_stop_backup", "pg_stat_reset", "lo_", "dblink", "xp_", "sp_",
)


def check_select(sql: str, dialect: str, allowed_tables: Collection[str] | None, row_limit: int) -> str:
    """Return ``sql`` as one vetted, row-capped SELECT rendered in ``dialect``; raise ``InvalidArgument``
    naming the problem otherwise. ``allowed_tables=None`` admits any table that is not a system catalog."""
    if row_limit < 0:
        raise InvalidArgument("the row limit must not be negative")
    tree = _unwrap(_parse_one(sql, dialect, MAX_SQL_CHARS, MAX_SQL_NESTING))
    if not isinstance(tree, (*TOP_LEVEL, *REFUSED_NODES)):
        first = (LEADING_COMMENTS.sub("", sql).split(None, 1) or ["?"])[0][:30].upper()
        raise InvalidArgument(f"only one SELECT statement is allowed; found a statement starting with {first}")
    _check_tree(tree, dialect, allowed_tables)
    capped = _cap_rows(tree, row_limit + 1)
    rendered = _render(capped, dialect)
    # The rendering adds quotes and keywords, so it may be a little longer than what was allowed in.
    _check_tree(_parse_one(rendered, dialect, 2 * MAX_SQL_CHARS, MAX_SQL_NESTING + 1), dialect, allowed_tables)
    return rendered


def _parse_one(sql: str, dialect: str, max_chars: int, max_nesting: int) -> exp.Expr:
    """The one statement in ``sql``; parse errors, several statements and unusual input are refused here."""
    _check_text(sql, max_chars, max_nesting)
    try:
        parsed = sqlglot.parse(sql, read=dialect)
        statements = [s for s in parsed if s is not None and not isinstance(s, EMPTY_STATEMENTS)]
    except RecursionError:
        raise InvalidArgument("the query is nested too deeply to check; simplify it") from None
    except SqlglotError as error:
        raise InvalidArgument(f"the query could not be parsed as {dialect} SQL: {_first_line(error)}") from None
    except ValueError as error:  # An unknown dialect name.
        raise InvalidArgument(f"unsupported SQL dialect {dialect!r}: {_first_line(error)}") from None
    except PARSER_BUGS:  # sqlglot tripping over odd input is still the input's problem, not a server error.
        raise InvalidArgument(f"the query could not be parsed as {dialect} SQL") from None
    if not statements:
        raise InvalidArgument("the query is empty")
    if len(statements) > 1:
        kinds = ", ".join(_describe(s) for s in statements[:3]) + (", …" if len(statements) > 3 else "")
        raise InvalidArgument(f"only one SELECT statement is allowed; found {len(statements)} statements: {kinds}")
    return statements[0]


def _unwrap(tree: exp.Expr) -> exp.Expr:
    """``(SELECT …)`` is the query itself."""
    while isinstance(tree, exp.Subquery) and not tree.alias and isinstance(tree.this, exp.Query):
        tree = tree.this
    tree.parent = None
    return tree


def _check_text(sql: str, max_chars: int, max_nesting: int) -> None:
    if len(sql) > max_chars:
        raise InvalidArgument(f"the query is {len(sql)} characters long; at most {max_chars} are allowed")
    if "\x00" in sql:
        raise InvalidArgument("the query contains a NUL character")
    if not sql.strip():
        raise InvalidArgument("the query is empty")
    if _nesting(sql) > max_nesting:
        raise InvalidArgument(f"the query nests parentheses more than {max_nesting} levels deep; simplify it")


def _nesting(sql: str) -> int:
    """The deepest parentheses outside quoted text and comments (an unbalanced quote counts what follows it)."""
    depth = deepest = 0
    for match in PARENTHESES.finditer(QUOTED_OR_COMMENT.sub(" ", sql)):
        depth = depth + 1 if match.group() == "(" else max(depth - 1, 0)
        deepest = max(deepest, depth)
    return deepest


def _first_line(error: Exception) -> str:
    text = " ".join(str(error).split("\n")[:1]).strip()
    text = text.replace("\x1b[4m", "").replace("\x1b[0m", "")
    return text[:200] or type(error).__name__


def _check_tree(tree: exp.Expr, dialect: str, allowed_tables: Collection[str] | None) -> None:
    try:
        _check_statement(tree)
        _check_nodes(tree)
        normalised = normalize_identifiers(tree.copy(), dialect=dialect)
        _check_tables(normalised, dialect, allowed_tables)
    except RecursionError:
        raise InvalidArgument("the query is nested too deeply to check; simplify it") from None


def _check_statement(tree: exp.Expr) -> None:
    if not isinstance(tree, TOP_LEVEL):
        raise InvalidArgument(f"only one SELECT statement is allowed; found {_describe(tree)}")


def _check_nodes(tree: exp.Expr) -> None:
    """Statements, locks and INTO anywhere; functions by name; what may stand in FROM."""
    for node in _walk(tree):
        if isinstance(node, REFUSED_NODES):
            raise InvalidArgument(
                f"only one SELECT statement is allowed; found {_describe(node)}{_where(node, tree)}"
            )
        if isinstance(node, exp.Func):
            _check_function(node)
        if isinstance(node, (exp.From, exp.Join)):
            _check_row_source(node.this, ROW_SOURCES)
        if isinstance(node, exp.Lateral):
            _check_row_source(node.this, LATERAL_SOURCES)
        if isinstance(node, exp.Table) and not isinstance(node.this, exp.Identifier):
            raise InvalidArgument(f"table functions are not allowed; found {_source_name(node)} in FROM")


def _walk(tree: exp.Expr) -> Iterator[exp.Expr]:
    """Every node, breadth first (sqlglot's walk is iterative, so deep trees do not recurse here)."""
    yield from tree.walk(bfs=True)


def _check_function(node: exp.Func) -> None:
    for name in _function_names(node):
        if name in REFUSED_FUNCTIONS or name.startswith(REFUSED_FUNCTION_PREFIXES):
            raise InvalidArgument(f"the function {name}() is not allowed in queries")


def _function_names(node: exp.Func) -> set[str]:
    if isinstance(node, exp.Anonymous):
        return {node.name.lower()}
    return {name.lower() for name in type(node).sql_names()} | {node.key.lower()}


def _check_row_source(source: exp.Expr | None, allowed: tuple[type[exp.Expr], ...]) -> None:
    if source is None or isinstance(source, allowed):
        return
    raise InvalidArgument(f"table functions are not allowed; found {_source_name(source)} in FROM")


def _source_name(node: exp.Expr) -> str:
    inner = node.this if isinstance(node, exp.Table) and isinstance(node.this, exp.Expr) else node
    if isinstance(inner, exp.Anonymous):
        return f"{inner.name}()"
    if isinstance(inner, exp.Func):
        return f"{inner.sql_name().lower()}()"
    if inner is None or isinstance(inner, exp.Table):
        return "ROWS FROM (…)"
    return inner.key.upper()


def _describe(node: exp.Expr) -> str:
    """A statement's kind as a user would name it: DELETE, DROP, LOAD…"""
    if isinstance(node, exp.Command):
        return str(node.this).upper() or "an unsupported statement"
    if isinstance(node, exp.Into):
        return "SELECT … INTO"
    if isinstance(node, exp.Lock):
        return "a locking clause (FOR UPDATE/FOR SHARE)"
    if isinstance(node, exp.Set):
        return "SET"
    if isinstance(node, exp.Transaction):
        return "BEGIN"
    if isinstance(node, exp.Returning):
        return "RETURNING"
    if isinstance(node, exp.Create):
        return f"CREATE {node.args.get('kind') or ''}".strip()
    if isinstance(node, exp.Drop):
        return f"DROP {node.args.get('kind') or ''}".strip()
    return KIND_NAMES.get(node.key, node.key.upper())


KIND_NAMES = {
    "truncatetable": "TRUNCATE",
    "alterrename": "ALTER",
    "altersession": "ALTER SESSION",
    "loaddata": "LOAD DATA",
    "executesql": "EXECUTE",
}


def _where(node: exp.Expr, tree: exp.Expr) -> str:
    if node is tree:
        return ""
    if node.find_ancestor(exp.CTE) is not None:
        return " inside a WITH clause"
    if node.find_ancestor(exp.Subquery) is not None:
        return " inside a subquery"
    return ""


# --- tables -------------------------------------------------------------------------------------------


def _check_tables(tree: exp.Expr, dialect: str, allowed_tables: Collection[str] | None) -> None:
    """Every table reference that is not one of the query's own CTEs must be an allowed table."""
    default = DEFAULT_SCHEMAS.get(dialect)
    allowed = None if allowed_tables is None else {_table_key(name.split("."), default) for name in allowed_tables}
    for table in tree.find_all(exp.Table):
        parts = [part.name for part in table.parts]
        if len(parts) == 1 and _is_cte_reference(table, parts[0]):
            continue
        shown = ".".join(parts)[:100]
        if allowed is None:
            _check_open_reference(parts, shown)
        elif _table_key(parts, default) not in allowed:
            if any(char in PATH_CHARACTERS for char in parts[-1]):
                raise InvalidArgument("a table name looks like a file path or URL; only this data source's tables "
                                      "can be queried")  # fmt: skip
            raise InvalidArgument(f"the table {shown} is not part of this data source")


def _table_key(parts: list[str], default_schema: str | None) -> tuple[str, ...]:
    lowered = [part.lower() for part in parts]
    if len(lowered) == 2 and default_schema is not None and lowered[0] == default_schema:
        lowered = lowered[1:]
    return tuple(lowered)


def _check_open_reference(parts: list[str], shown: str) -> None:
    """With no table list, still refuse system catalogs and names DuckDB would read as file paths."""
    lowered = [part.lower() for part in parts]
    if any(schema in SYSTEM_SCHEMAS for schema in lowered[:-1]):
        raise InvalidArgument(f"system catalog tables such as {shown} are not allowed")
    if lowered[-1].startswith(SYSTEM_TABLE_PREFIXES) or lowered[-1] == "information_schema":
        raise InvalidArgument(f"system catalog tables such as {shown} are not allowed")
    if any(char in PATH_CHARACTERS for char in parts[-1]):
        raise InvalidArgument("a table name looks like a file path or URL; those are not allowed")


def _is_cte_reference(table: exp.Table, name: str) -> bool:
    """Whether ``name`` here means a CTE of an enclosing WITH (see the module docstring for the rule)."""
    node: exp.Expr = table
    while node.parent is not None:
        parent = node.parent
        if isinstance(parent, exp.With) and isinstance(node, exp.CTE):
            ctes = list(parent.expressions)
            position = next(i for i, cte in enumerate(ctes) if cte is node)
            if name in {cte.alias_or_name for cte in ctes[:position]}:
                return True
            if parent.args.get("recursive") and node.alias_or_name == name:
                return True
        elif isinstance(parent, exp.Query):
            with_ = parent.args.get("with_") or parent.args.get("with")
            ctes = with_.expressions if isinstance(with_, exp.With) and node is not with_ else []
            if name in {cte.alias_or_name for cte in ctes}:
                return True
        node = parent
    return False


# --- row cap and rendering ----------------------------------------------------------------------------


def _cap_rows(tree: exp.Expr, cap: int) -> exp.Expr:
    """Make the outer query return at most ``cap`` rows, keeping a smaller literal limit."""
    limit = tree.args.get("limit")
    if limit is None:
        tree.set("limit", exp.Limit(expression=exp.Literal.number(cap)))
        return tree
    current = _literal_count(limit)
    if current is None:
        return _wrap(tree, cap)
    if current > cap:
        limit.set("count" if isinstance(limit, exp.Fetch) else "expression", exp.Literal.number(cap))
    return tree


def _literal_count(limit: exp.Expr) -> int | None:
    """The row count of a plain ``LIMIT n`` or ``FETCH FIRST n ROWS ONLY``; None for anything fancier."""
    options = limit.args.get("limit_options")
    if isinstance(options, exp.Expr) and (options.args.get("percent") or options.args.get("with_ties")):
        return None
    count = limit.args.get("count") if isinstance(limit, exp.Fetch) else limit.args.get("expression")
    if isinstance(count, exp.Literal) and not count.is_string and count.this.isdigit():
        return int(count.this)
    return None


def _wrap(tree: exp.Expr, cap: int) -> exp.Expr:
    """``SELECT * FROM (<query>) AS _convener_capped LIMIT cap``, for limits we cannot simply lower."""
    subquery = exp.Subquery(this=tree, alias=exp.TableAlias(this=exp.to_identifier(CAP_ALIAS)))
    return exp.select("*").from_(subquery, copy=False).limit(cap, copy=False)


def _render(tree: exp.Expr, dialect: str) -> str:
    try:
        return tree.sql(dialect=dialect, comments=False)
    except RecursionError:
        raise InvalidArgument("the query is nested too deeply to check; simplify it") from None
    except (SqlglotError, *PARSER_BUGS) as error:
        raise InvalidArgument(f"the query could not be rendered as {dialect} SQL: {_first_line(error)}") from None
