"""Changelogs: every change of an app or its parts, numbered per app.

Revision ID: 0012
Revises: 0011
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

Json = sa.JSON().with_variant(JSONB(), "postgresql")


def upgrade() -> None:
    # A plain ADD COLUMN on both engines: a batch (copy-and-rename) of ces_apps on SQLite would drop the old
    # table with foreign keys on, and so delete every app's children.
    op.add_column("ces_apps", sa.Column("changelog_sequence", sa.BigInteger, nullable=False, server_default="0"))
    op.add_column("ces_apps", sa.Column("changelog_time_us", sa.BigInteger, nullable=False, server_default="0"))
    op.create_table(
        "ces_changelogs",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("app_pk", sa.Integer, sa.ForeignKey("ces_apps.id", ondelete="CASCADE"), nullable=False),
        sa.Column("changelog_id", sa.String(32), nullable=False),
        sa.Column("sequence_number", sa.BigInteger, nullable=False),
        sa.Column("create_time_us", sa.BigInteger, nullable=False),
        sa.Column("author", sa.Text, nullable=False),
        sa.Column("action", sa.String(16), nullable=False),
        sa.Column("resource", sa.Text, nullable=False),
        sa.Column("resource_type", sa.String(64), nullable=False),
        sa.Column("body", Json, nullable=False),
    )
    op.create_index("ix_ces_changelogs_id", "ces_changelogs", ["app_pk", "changelog_id"], unique=True)
    op.create_index("ix_ces_changelogs_sequence", "ces_changelogs", ["app_pk", "sequence_number"], unique=True)
    op.create_index("ix_ces_changelogs_time", "ces_changelogs", ["app_pk", "create_time_us"])


def downgrade() -> None:
    op.drop_table("ces_changelogs")
    op.execute("ALTER TABLE ces_apps DROP COLUMN changelog_time_us")  # SQLite 3.35+ and PostgreSQL
    op.execute("ALTER TABLE ces_apps DROP COLUMN changelog_sequence")
