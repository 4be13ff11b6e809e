"""Analytics: SQL sources, data agents, conversations and their messages.

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

Json = sa.JSON().with_variant(JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "analytics_sql_sources",
        sa.Column("name", sa.String(63), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("location", sa.Text, nullable=False),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("create_time_us", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_analytics_sql_sources"),
    )
    op.create_table(
        "analytics_data_agents",
        sa.Column("agent_id", sa.String(63), nullable=False),
        sa.Column("display_name", sa.Text, nullable=False),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("labels", Json, nullable=True),
        sa.Column("staging_context", Json, nullable=True),
        sa.Column("published_context", Json, nullable=True),
        sa.Column("last_published_context", Json, nullable=True),
        sa.Column("creator", sa.String(255), nullable=False),
        sa.Column("create_time_us", sa.BigInteger, nullable=False),
        sa.Column("update_time_us", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("agent_id", name="pk_analytics_data_agents"),
    )
    op.create_table(
        "analytics_conversations",
        sa.Column("conversation_id", sa.String(64), nullable=False),
        sa.Column("agent_id", sa.String(63), nullable=False),
        sa.Column("principal", sa.String(255), nullable=False),
        sa.Column("create_time_us", sa.BigInteger, nullable=False),
        sa.Column("last_used_time_us", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("conversation_id", name="pk_analytics_conversations"),
        sa.ForeignKeyConstraint(["agent_id"], ["analytics_data_agents.agent_id"],
                                name="fk_analytics_conversations_agent_id_analytics_data_agents",
                                ondelete="CASCADE"),
    )
    op.create_index("ix_analytics_conversations_principal", "analytics_conversations",
                    ["principal", "last_used_time_us", "conversation_id"])
    op.create_table(
        "analytics_messages",
        sa.Column("conversation_id", sa.String(64), nullable=False),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("message", Json, nullable=False),
        sa.PrimaryKeyConstraint("conversation_id", "seq", name="pk_analytics_messages"),
        sa.ForeignKeyConstraint(["conversation_id"], ["analytics_conversations.conversation_id"],
                                name="fk_analytics_messages_conversation_id_analytics_conversations",
                                ondelete="CASCADE"),
    )


def downgrade() -> None:
    op.drop_table("analytics_messages")
    op.drop_index("ix_analytics_conversations_principal", table_name="analytics_conversations")
    op.drop_table("analytics_conversations")
    op.drop_table("analytics_data_agents")
    op.drop_table("analytics_sql_sources")
