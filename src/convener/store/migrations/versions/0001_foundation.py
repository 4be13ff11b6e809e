"""Foundation: installation values, API keys, ces apps and conversations.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

Json = sa.JSON().with_variant(JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "installation",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("value", sa.LargeBinary, nullable=False),
        sa.PrimaryKeyConstraint("key", name="pk_installation"),
    )
    op.create_table(
        "api_keys",
        sa.Column("key_id", sa.String(32), nullable=False),
        sa.Column("key_hash", sa.String(64), nullable=False),
        sa.Column("principal", sa.String(256), nullable=False),
        sa.Column("scopes", Json, nullable=False),
        sa.Column("create_time_us", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("key_id", name="pk_api_keys"),
        sa.UniqueConstraint("key_hash", name="uq_api_keys_key_hash"),
    )
    op.create_table(
        "ces_apps",
        sa.Column("id", sa.Integer, autoincrement=True, nullable=False),
        sa.Column("name", sa.String(512), nullable=False),
        sa.Column("parent", sa.String(256), nullable=False),
        sa.Column("app_id", sa.String(128), nullable=False),
        sa.Column("display_name", sa.String(512), nullable=False),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("create_time_us", sa.BigInteger, nullable=False),
        sa.Column("update_time_us", sa.BigInteger, nullable=False),
        sa.Column("etag", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_ces_apps"),
        sa.UniqueConstraint("name", name="uq_ces_apps_name"),
    )
    op.create_index("ix_ces_apps_parent_app_id", "ces_apps", ["parent", "app_id"])
    op.create_table(
        "ces_conversations",
        sa.Column("id", sa.Integer, autoincrement=True, nullable=False),
        sa.Column("app_pk", sa.Integer, nullable=False),
        sa.Column("conversation_id", sa.String(128), nullable=False),
        sa.Column("start_time_us", sa.BigInteger, nullable=False),
        sa.Column("end_time_us", sa.BigInteger, nullable=True),
        sa.Column("turn_count", sa.Integer, nullable=False),
        sa.Column("source", sa.String(32), nullable=False),
        sa.Column("input_types", sa.Integer, nullable=False),
        sa.Column("channel_type", sa.String(32), nullable=False),
        sa.Column("entry_agent", sa.String(512), nullable=False),
        sa.Column("deployment", sa.String(512), nullable=False),
        sa.Column("app_version", sa.String(512), nullable=False),
        sa.Column("language_code", sa.String(64), nullable=False),
        sa.Column("body", Json, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_ces_conversations"),
        sa.ForeignKeyConstraint(
            ["app_pk"], ["ces_apps.id"], name="fk_ces_conversations_app_pk_ces_apps", ondelete="CASCADE"
        ),
    )
    op.create_index(
        "ix_ces_conv_id", "ces_conversations", ["app_pk", "conversation_id"], unique=True
    )
    op.create_index(
        "ix_ces_conv_keyset",
        "ces_conversations",
        ["app_pk", "start_time_us", "conversation_id"],
    )
    op.create_index(
        "ix_ces_conv_source_keyset",
        "ces_conversations",
        ["app_pk", "source", "start_time_us", "conversation_id"],
    )


def downgrade() -> None:
    op.drop_table("ces_conversations")
    op.drop_table("ces_apps")
    op.drop_table("api_keys")
    op.drop_table("installation")
