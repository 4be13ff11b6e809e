"""Chat: users, spaces, memberships, messages, mentions, external ID links, and full-text search.

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

Json = sa.JSON().with_variant(JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "chat_users",
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("display_name", sa.String(512), nullable=False),
        sa.Column("email", sa.String(320), nullable=True),
        sa.Column("user_type", sa.String(8), nullable=False),
        sa.PrimaryKeyConstraint("user_id", name="pk_chat_users"),
        sa.UniqueConstraint("email", name="uq_chat_users_email"),
    )
    op.create_table(
        "chat_links",
        sa.Column("source", sa.String(32), nullable=False),
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("external_id", sa.String(512), nullable=False),
        sa.Column("internal_id", sa.String(128), nullable=False),
        sa.PrimaryKeyConstraint("source", "kind", "external_id", name="pk_chat_links"),
    )
    op.create_table(
        "chat_spaces",
        sa.Column("space_id", sa.String(128), nullable=False),
        sa.Column("display_name", sa.String(512), nullable=True),
        sa.Column("space_type", sa.String(16), nullable=False),
        sa.Column("create_time_us", sa.BigInteger, nullable=True),
        sa.Column("last_active_time_us", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("space_id", name="pk_chat_spaces"),
    )
    op.create_table(
        "chat_memberships",
        sa.Column("space_id", sa.String(128), nullable=False),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("create_time_us", sa.BigInteger, nullable=True),
        sa.PrimaryKeyConstraint("space_id", "user_id", name="pk_chat_memberships"),
        sa.ForeignKeyConstraint(["space_id"], ["chat_spaces.space_id"], name="fk_chat_memberships_space_id_chat_spaces",
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["chat_users.user_id"], name="fk_chat_memberships_user_id_chat_users",
                                ondelete="CASCADE"),
    )
    op.create_index("ix_chat_memberships_user", "chat_memberships", ["user_id", "space_id"])
    op.create_table(
        "chat_messages",
        sa.Column("row_id", sa.Integer, autoincrement=True, nullable=False),
        sa.Column("space_id", sa.String(128), nullable=False),
        sa.Column("message_id", sa.String(128), nullable=False),
        sa.Column("thread_id", sa.String(128), nullable=True),
        sa.Column("threaded_reply", sa.Boolean, nullable=False),
        sa.Column("sender_id", sa.String(128), nullable=True),
        sa.Column("create_time_us", sa.BigInteger, nullable=False),
        sa.Column("last_update_time_us", sa.BigInteger, nullable=True),
        sa.Column("delete_time_us", sa.BigInteger, nullable=True),
        sa.Column("private_viewer_id", sa.String(128), nullable=True),
        sa.Column("system", sa.Boolean, nullable=False),
        sa.Column("listed", sa.Boolean, nullable=False),
        sa.Column("has_link", sa.Boolean, nullable=False),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("search_text", sa.Text, nullable=False),
        sa.Column("attachments", Json, nullable=True),
        sa.Column("reactions", Json, nullable=True),
        sa.Column("quote", Json, nullable=True),
        sa.PrimaryKeyConstraint("row_id", name="pk_chat_messages"),
        sa.ForeignKeyConstraint(["space_id"], ["chat_spaces.space_id"], name="fk_chat_messages_space_id_chat_spaces",
                                ondelete="CASCADE"),
    )
    op.create_index("ix_chat_messages_id", "chat_messages", ["space_id", "message_id"], unique=True)
    op.create_index("ix_chat_messages_listing", "chat_messages", ["space_id", "listed", "create_time_us", "row_id"])
    op.create_index("ix_chat_messages_thread", "chat_messages",
                    ["space_id", "thread_id", "listed", "create_time_us", "row_id"])
    op.create_index("ix_chat_messages_sender", "chat_messages", ["sender_id", "create_time_us"])
    # Searches without keywords over all of a caller's conversations walk messages in time order.
    op.create_index("ix_chat_messages_time", "chat_messages", ["create_time_us", "row_id"])
    op.create_table(
        "chat_mentions",
        sa.Column("message_row_id", sa.Integer, nullable=False),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.PrimaryKeyConstraint("message_row_id", "user_id", name="pk_chat_mentions"),
        sa.ForeignKeyConstraint(["message_row_id"], ["chat_messages.row_id"],
                                name="fk_chat_mentions_message_row_id_chat_messages", ondelete="CASCADE"),
    )
    op.create_index("ix_chat_mentions_user", "chat_mentions", ["user_id", "message_row_id"])
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "ALTER TABLE chat_messages ADD COLUMN search_vector tsvector "
            "GENERATED ALWAYS AS (to_tsvector('simple', search_text)) STORED"
        )
        op.execute("CREATE INDEX ix_chat_messages_search_vector ON chat_messages USING gin (search_vector)")
    else:
        # External-content FTS5: the index reads its text from chat_messages; triggers keep it in step.
        op.execute(
            "CREATE VIRTUAL TABLE chat_messages_fts USING fts5(search_text, content='chat_messages', "
            "content_rowid='row_id', tokenize='unicode61 remove_diacritics 2')"
        )
        op.execute(
            "CREATE TRIGGER chat_messages_fts_insert AFTER INSERT ON chat_messages BEGIN "
            "INSERT INTO chat_messages_fts(rowid, search_text) VALUES (new.row_id, new.search_text); END"
        )
        op.execute(
            "CREATE TRIGGER chat_messages_fts_delete AFTER DELETE ON chat_messages BEGIN "
            "INSERT INTO chat_messages_fts(chat_messages_fts, rowid, search_text) "
            "VALUES ('delete', old.row_id, old.search_text); END"
        )
        op.execute(
            "CREATE TRIGGER chat_messages_fts_update AFTER UPDATE OF search_text ON chat_messages BEGIN "
            "INSERT INTO chat_messages_fts(chat_messages_fts, rowid, search_text) "
            "VALUES ('delete', old.row_id, old.search_text); "
            "INSERT INTO chat_messages_fts(rowid, search_text) VALUES (new.row_id, new.search_text); END"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        op.execute("DROP TABLE IF EXISTS chat_messages_fts")
    for table in ("chat_mentions", "chat_messages", "chat_memberships", "chat_spaces", "chat_links", "chat_users"):
        op.drop_table(table)
