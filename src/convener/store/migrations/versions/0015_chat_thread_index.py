"""Chat: the thread index holds threaded messages only. A Slack export's messages outside threads (most of them)
have no thread, and their entries in it served no query (every query of it names a thread, which implies the
index's condition on both engines) while costing PostgreSQL about 0.5 s of 200,000 messages' insert (2026-12-05:
0.70-0.85 s for the whole index against 0.20-0.24 s for threaded ones, one in ten).

Revision ID: 0015
Revises: 0014
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

_COLUMNS = ["space_id", "thread_id", "listed", "create_time_us", "row_id"]
_THREADED = sa.text("thread_id IS NOT NULL")


def upgrade() -> None:
    op.drop_index("ix_chat_messages_thread", table_name="chat_messages")
    op.create_index("ix_chat_messages_thread", "chat_messages", _COLUMNS, postgresql_where=_THREADED,
                    sqlite_where=_THREADED)


def downgrade() -> None:
    op.drop_index("ix_chat_messages_thread", table_name="chat_messages")
    op.create_index("ix_chat_messages_thread", "chat_messages", _COLUMNS)
