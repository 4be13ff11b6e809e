"""Evaluations: results, runs, long-running operations; unique display names for app parts.

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

Json = sa.JSON().with_variant(JSONB(), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("ces_definitions") as batch:
        batch.alter_column("collection", type_=sa.String(32), existing_type=sa.String(16), existing_nullable=False)
        batch.add_column(sa.Column("display_name", sa.String(512), nullable=True))
    op.create_index("ix_ces_def_display_name", "ces_definitions", ["app_pk", "collection", "display_name"])
    op.create_table(
        "ces_evaluation_runs",
        sa.Column("id", sa.Integer, autoincrement=True, nullable=False),
        sa.Column("app_pk", sa.Integer, nullable=False),
        sa.Column("run_id", sa.String(128), nullable=False),
        sa.Column("create_time_us", sa.BigInteger, nullable=False),
        sa.Column("initiated_by", sa.String(256), nullable=False),
        sa.Column("app_version_display_name", sa.String(512), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("cancel_requested", sa.Boolean, nullable=False),
        sa.Column("operation", sa.String(512), nullable=False),
        sa.Column("pending_count", sa.Integer, nullable=False),
        sa.Column("completed_count", sa.Integer, nullable=False),
        sa.Column("passed_count", sa.Integer, nullable=False),
        sa.Column("failed_count", sa.Integer, nullable=False),
        sa.Column("error_count", sa.Integer, nullable=False),
        sa.Column("cancelled_count", sa.Integer, nullable=False),
        sa.Column("body", Json, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_ces_evaluation_runs"),
        sa.ForeignKeyConstraint(["app_pk"], ["ces_apps.id"], name="fk_ces_evaluation_runs_app_pk_ces_apps",
                                ondelete="CASCADE"),
    )
    op.create_index("ix_ces_eval_runs_id", "ces_evaluation_runs", ["app_pk", "run_id"], unique=True)
    op.create_index("ix_ces_eval_runs_state", "ces_evaluation_runs", ["state"])
    op.create_table(
        "ces_evaluation_results",
        sa.Column("id", sa.Integer, autoincrement=True, nullable=False),
        sa.Column("app_pk", sa.Integer, nullable=False),
        sa.Column("evaluation_id", sa.String(128), nullable=False),
        sa.Column("result_id", sa.String(128), nullable=False),
        sa.Column("evaluation_run", sa.String(512), nullable=False),
        sa.Column("create_time_us", sa.BigInteger, nullable=False),
        sa.Column("execution_state", sa.String(16), nullable=False),
        sa.Column("evaluation_status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("body", Json, nullable=False),
        sa.Column("plan", Json, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_ces_evaluation_results"),
        sa.ForeignKeyConstraint(["app_pk"], ["ces_apps.id"], name="fk_ces_evaluation_results_app_pk_ces_apps",
                                ondelete="CASCADE"),
    )
    op.create_index("ix_ces_eval_results_id", "ces_evaluation_results", ["app_pk", "evaluation_id", "result_id"],
                    unique=True)
    op.create_index("ix_ces_eval_results_keyset", "ces_evaluation_results",
                    ["app_pk", "evaluation_id", "create_time_us", "result_id"])
    op.create_index("ix_ces_eval_results_run", "ces_evaluation_results",
                    ["app_pk", "evaluation_run", "execution_state"])
    op.create_index("ix_ces_eval_results_time", "ces_evaluation_results",
                    ["app_pk", "create_time_us", "evaluation_id", "result_id"])
    op.create_table(
        "operations",
        sa.Column("id", sa.Integer, autoincrement=True, nullable=False),
        sa.Column("location", sa.String(256), nullable=False),
        sa.Column("operation_id", sa.String(128), nullable=False),
        sa.Column("owner", sa.String(256), nullable=False),
        sa.Column("create_time_us", sa.BigInteger, nullable=False),
        sa.Column("done", sa.Boolean, nullable=False),
        sa.Column("cancel_requested", sa.Boolean, nullable=False),
        sa.Column("body", Json, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_operations"),
    )
    op.create_index("ix_operations_id", "operations", ["location", "operation_id"], unique=True)
    op.create_index("ix_operations_keyset", "operations", ["location", "create_time_us", "operation_id"])


def downgrade() -> None:
    op.drop_table("operations")
    op.drop_table("ces_evaluation_results")
    op.drop_table("ces_evaluation_runs")
    op.drop_index("ix_ces_def_display_name", table_name="ces_definitions")
    with op.batch_alter_table("ces_definitions") as batch:
        batch.drop_column("display_name")
        batch.alter_column("collection", type_=sa.String(16), existing_type=sa.String(32), existing_nullable=False)
