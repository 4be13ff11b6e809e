"""Agent runtime: app settings, the parts of apps (agents, tools, toolsets, versions) and sessions.

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

Json = sa.JSON().with_variant(JSONB(), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("ces_apps") as batch:
        batch.add_column(sa.Column("settings", Json, nullable=True))
    op.create_table(
        "ces_definitions",
        sa.Column("id", sa.Integer, autoincrement=True, nullable=False),
        sa.Column("app_pk", sa.Integer, nullable=False),
        sa.Column("collection", sa.String(16), nullable=False),
        sa.Column("resource_id", sa.String(128), nullable=False),
        sa.Column("create_time_us", sa.BigInteger, nullable=False),
        sa.Column("update_time_us", sa.BigInteger, nullable=False),
        sa.Column("etag", sa.String(64), nullable=False),
        sa.Column("body", Json, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_ces_definitions"),
        sa.ForeignKeyConstraint(
            ["app_pk"], ["ces_apps.id"], name="fk_ces_definitions_app_pk_ces_apps", ondelete="CASCADE"
        ),
    )
    op.create_index("ix_ces_def_id", "ces_definitions", ["app_pk", "collection", "resource_id"], unique=True)
    op.create_table(
        "ces_sessions",
        sa.Column("id", sa.Integer, autoincrement=True, nullable=False),
        sa.Column("app_pk", sa.Integer, nullable=False),
        sa.Column("session_id", sa.String(128), nullable=False),
        sa.Column("app_version", sa.String(512), nullable=False),
        sa.Column("revision", sa.Integer, nullable=False),
        sa.Column("ended", sa.Boolean, nullable=False),
        sa.Column("update_time_us", sa.BigInteger, nullable=False),
        sa.Column("state", Json, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_ces_sessions"),
        sa.ForeignKeyConstraint(["app_pk"], ["ces_apps.id"], name="fk_ces_sessions_app_pk_ces_apps", ondelete="CASCADE"),
    )
    op.create_index("ix_ces_sessions_id", "ces_sessions", ["app_pk", "session_id"], unique=True)


def downgrade() -> None:
    op.drop_index("ix_ces_sessions_id", table_name="ces_sessions")
    op.drop_table("ces_sessions")
    op.drop_index("ix_ces_def_id", table_name="ces_definitions")
    op.drop_table("ces_definitions")
    with op.batch_alter_table("ces_apps") as batch:
        batch.drop_column("settings")
