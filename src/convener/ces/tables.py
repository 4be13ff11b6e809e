"""Relational schema of the ces service.

A conversation is stored as its proto3 JSON header (``body``: everything but ``turns``) plus one row per
turn (``ces_conversation_turns``), so that recording a turn appends a row instead of rewriting the whole
conversation; ``convener.ces.conversation_bodies`` assembles them back. The fields that filters and
ordering use are copied into real, indexed columns when it is written. Times are integer
microseconds since the epoch, so that SQLite and PostgreSQL order and compare them alike, plus the
nanoseconds below the microsecond (0-999) in a column of their own, so that nothing is rounded.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    ForeignKey,
    Index,
    Integer,
    SmallInteger,
    String,
    Table,
    Text,
)

from convener.store.schema import Json, metadata

apps = Table(
    "ces_apps",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(512), nullable=False, unique=True),
    Column("parent", String(256), nullable=False),
    Column("app_id", String(128), nullable=False),
    Column("display_name", String(512), nullable=False, default=""),
    Column("description", Text, nullable=False, default=""),
    Column("create_time_us", BigInteger, nullable=False),
    Column("update_time_us", BigInteger, nullable=False),
    Column("etag", String(64), nullable=False),
    # What else the app says about running it (rootAgent, variableDeclarations, ...), as proto3 JSON.
    Column("settings", Json, nullable=True),
    # The sequence number of the app's newest changelog: bumped in each change's transaction, so that on
    # PostgreSQL concurrent writers of one app queue on this row and take their numbers in commit order.
    Column("changelog_sequence", BigInteger, nullable=False, server_default="0"),
    # ... and its createTime, which the next one's must follow.
    Column("changelog_time_us", BigInteger, nullable=False, server_default="0"),
    Index(None, "parent", "app_id"),
)

conversations = Table(
    "ces_conversations",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("app_pk", Integer, ForeignKey("ces_apps.id", ondelete="CASCADE"), nullable=False),
    Column("conversation_id", String(128), nullable=False),
    Column("start_time_us", BigInteger, nullable=False),
    Column("start_time_nanos", SmallInteger, nullable=False, server_default="0"),
    Column("end_time_us", BigInteger, nullable=True),
    Column("end_time_nanos", SmallInteger, nullable=True),
    Column("turn_count", Integer, nullable=False),
    Column("source", String(32), nullable=False),
    Column("input_types", Integer, nullable=False),
    Column("channel_type", String(32), nullable=False),
    Column("entry_agent", String(512), nullable=False),
    Column("deployment", String(512), nullable=False),
    Column("app_version", String(512), nullable=False),
    Column("language_code", String(64), nullable=False),
    Column("body", Json, nullable=False),
    # One conversation ID per app; also the lookup index for get/delete.
    Index("ix_ces_conv_id", "app_pk", "conversation_id", unique=True),
    # The keyset of list_conversations: newest first, then by name.
    Index("ix_ces_conv_keyset", "app_pk", "start_time_us", "start_time_nanos", "conversation_id"),
    # The common narrowing of the list: one source, still newest first.
    Index("ix_ces_conv_source_keyset", "app_pk", "source", "start_time_us", "start_time_nanos", "conversation_id"),
    # The conversations of one deployment, still newest first (list_conversations with deployment = "…").
    Index("ix_ces_conv_deployment_keyset", "app_pk", "deployment", "start_time_us", "start_time_nanos",
          "conversation_id"),
)

conversation_turns = Table(
    "ces_conversation_turns",
    metadata,
    Column("conversation_pk", Integer, ForeignKey("ces_conversations.id", ondelete="CASCADE"), primary_key=True),
    Column("turn_index", Integer, primary_key=True, autoincrement=False),
    Column("body", Json, nullable=False),
)
"""A conversation's turns, each its proto3 JSON ``Turn``, in order by ``turn_index`` (0, 1, ...)."""

definitions = Table(
    "ces_definitions",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("app_pk", Integer, ForeignKey("ces_apps.id", ondelete="CASCADE"), nullable=False),
    Column("collection", String(32), nullable=False),
    Column("resource_id", String(128), nullable=False),
    # Kinds whose display names are unique within an app (evaluations, datasets, ...) are checked on it.
    Column("display_name", String(512), nullable=True),
    Column("create_time_us", BigInteger, nullable=False),
    Column("update_time_us", BigInteger, nullable=False),
    Column("etag", String(64), nullable=False),
    Column("body", Json, nullable=False),
    # Agents, tools, toolsets and app versions of an app, one collection each; also their list order.
    Index("ix_ces_def_id", "app_pk", "collection", "resource_id", unique=True),
    Index("ix_ces_def_display_name", "app_pk", "collection", "display_name"),
)
"""The parts of an app, each stored whole as its proto3 JSON: they are read whole and listed by ID."""

sessions = Table(
    "ces_sessions",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("app_pk", Integer, ForeignKey("ces_apps.id", ondelete="CASCADE"), nullable=False),
    Column("session_id", String(128), nullable=False),
    Column("app_version", String(512), nullable=False),
    # The deployment the session was started through ("" when none): it chose app_version, once.
    Column("deployment", String(512), nullable=False, server_default=""),
    Column("revision", Integer, nullable=False),
    Column("ended", Boolean, nullable=False),
    Column("update_time_us", BigInteger, nullable=False),
    Column("state", Json, nullable=False),
    Index("ix_ces_sessions_id", "app_pk", "session_id", unique=True),
)
"""What a session carries between run_session calls: variables, current agent, pending client tool calls."""

evaluation_runs = Table(
    "ces_evaluation_runs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("app_pk", Integer, ForeignKey("ces_apps.id", ondelete="CASCADE"), nullable=False),
    Column("run_id", String(128), nullable=False),
    Column("create_time_us", BigInteger, nullable=False),
    Column("initiated_by", String(256), nullable=False),
    Column("app_version_display_name", String(512), nullable=False),
    Column("state", String(16), nullable=False),
    Column("cancel_requested", Boolean, nullable=False),
    Column("operation", String(512), nullable=False),
    # The run's progress, counted as its results settle (incremented, so each settles in constant time).
    Column("pending_count", Integer, nullable=False),
    Column("completed_count", Integer, nullable=False),
    Column("passed_count", Integer, nullable=False),
    Column("failed_count", Integer, nullable=False),
    Column("error_count", Integer, nullable=False),
    Column("cancelled_count", Integer, nullable=False),
    Column("body", Json, nullable=False),
    Index("ix_ces_eval_runs_id", "app_pk", "run_id", unique=True),
    # Runs still to finish.
    Index("ix_ces_eval_runs_state", "state"),
)
"""An EvaluationRun. ``body`` holds what is fixed when it starts; state and counts are the columns, and the
per-evaluation summaries are written into ``body`` when the run finishes."""

evaluation_results = Table(
    "ces_evaluation_results",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("app_pk", Integer, ForeignKey("ces_apps.id", ondelete="CASCADE"), nullable=False),
    Column("evaluation_id", String(128), nullable=False),
    Column("result_id", String(128), nullable=False),
    Column("evaluation_run", String(512), nullable=False),
    Column("create_time_us", BigInteger, nullable=False),
    Column("execution_state", String(16), nullable=False),
    Column("evaluation_status", String(16), nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("body", Json, nullable=False),
    # What the run replays: the evaluation as it was when the run started, and how to run it.
    Column("plan", Json, nullable=False),
    # One evaluation's results, newest first: lastTenResults, lastCompletedResult, list_evaluation_results.
    Index("ix_ces_eval_results_id", "app_pk", "evaluation_id", "result_id", unique=True),
    Index("ix_ces_eval_results_keyset", "app_pk", "evaluation_id", "create_time_us", "result_id"),
    # A run's results: its progress, and results listed across evaluations with a run filter.
    Index("ix_ces_eval_results_run", "app_pk", "evaluation_run", "execution_state"),
    # Results across evaluations, newest first (parent …/evaluations/-).
    Index("ix_ces_eval_results_time", "app_pk", "create_time_us", "evaluation_id", "result_id"),
)
"""An EvaluationResult, stored whole; state and outcome are copied into columns for progress counts."""

evaluation_aggregates = Table(
    "ces_evaluation_aggregates",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("app_pk", Integer, ForeignKey("ces_apps.id", ondelete="CASCADE"), nullable=False),
    Column("evaluation_id", String(128), nullable=False),
    # The sums behind aggregatedMetrics (convener.ces.evaluation.aggregation.Aggregate) in ``body``, and the
    # evaluation's runs with their result counts in ``runs``: updated in the transaction that stores, settles or
    # deletes each result, so that listing evaluations reads a row per evaluation instead of every result's body.
    # Apart because a completing result changes only the metrics, and the runs grow with every run.
    Column("body", Json, nullable=False),
    Column("runs", Json, nullable=False, server_default="[]"),
    Index("ix_ces_eval_aggregates_id", "app_pk", "evaluation_id", unique=True),
)
"""An evaluation's aggregates over all its results (see ``convener.ces.evaluation.aggregates``)."""

changelogs = Table(
    "ces_changelogs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("app_pk", Integer, ForeignKey("ces_apps.id", ondelete="CASCADE"), nullable=False),
    Column("changelog_id", String(32), nullable=False),
    Column("sequence_number", BigInteger, nullable=False),
    Column("create_time_us", BigInteger, nullable=False),
    # What list_changelogs filters on, as columns; the rest of the Changelog (description, the resource before
    # and after, dependent resources, display name) is ``body``.
    Column("author", Text, nullable=False),
    Column("action", String(16), nullable=False),
    Column("resource", Text, nullable=False),
    Column("resource_type", String(64), nullable=False),
    Column("body", Json, nullable=False),
    Index("ix_ces_changelogs_id", "app_pk", "changelog_id", unique=True),
    # The keyset of list_changelogs (newest first) and the app's latest change; unique, so no number is given twice.
    Index("ix_ces_changelogs_sequence", "app_pk", "sequence_number", unique=True),
    # Retention prunes by time; createTime filters narrow by it.
    Index("ix_ces_changelogs_time", "app_pk", "create_time_us"),
)
"""A Changelog: one create, update or delete of an app or one of its parts, written in that change's transaction."""
