"""Knowledge: data sources, documents and chunks, with full-text search over chunks.

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "knowledge_data_sources",
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("base_url", sa.Text, nullable=False),
        sa.Column("location", sa.Text, nullable=False),
        sa.Column("embedding_model", sa.String(128), nullable=True),
        sa.Column("create_time_us", sa.BigInteger, nullable=False),
        sa.Column("update_time_us", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_knowledge_data_sources"),
    )
    op.create_table(
        "knowledge_documents",
        sa.Column("doc_id", sa.Integer, autoincrement=True, nullable=False),
        sa.Column("name", sa.String(500), nullable=False),
        sa.Column("uri", sa.Text, nullable=False),
        sa.Column("data_source", sa.String(255), nullable=False),
        sa.Column("source_path", sa.Text, nullable=False),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("content_length_bytes", sa.BigInteger, nullable=False),
        sa.Column("update_time_us", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("doc_id", name="pk_knowledge_documents"),
        sa.UniqueConstraint("name", name="uq_knowledge_documents_name"),
        sa.ForeignKeyConstraint(["data_source"], ["knowledge_data_sources.name"],
                                name="fk_knowledge_documents_data_source_knowledge_data_sources", ondelete="CASCADE"),
    )
    op.create_index("ix_knowledge_documents_source", "knowledge_documents", ["data_source", "source_path"])
    op.create_index("ix_knowledge_documents_update_time", "knowledge_documents", ["update_time_us"])
    op.create_table(
        "knowledge_chunks",
        sa.Column("row_id", sa.Integer, autoincrement=True, nullable=False),
        sa.Column("doc_id", sa.Integer, nullable=False),
        sa.Column("chunk_index", sa.Integer, nullable=False),
        sa.Column("heading", sa.Text, nullable=False),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("start_byte", sa.Integer, nullable=False),
        sa.Column("end_byte", sa.Integer, nullable=False),
        sa.Column("embedding", sa.LargeBinary, nullable=True),
        sa.PrimaryKeyConstraint("row_id", name="pk_knowledge_chunks"),
        sa.ForeignKeyConstraint(["doc_id"], ["knowledge_documents.doc_id"],
                                name="fk_knowledge_chunks_doc_id_knowledge_documents", ondelete="CASCADE"),
    )
    op.create_index("ix_knowledge_chunks_document", "knowledge_chunks", ["doc_id", "chunk_index"], unique=True)
    if op.get_bind().dialect.name == "postgresql":
        # Headings weigh more than body text, as FTS5's bm25 column weights do on SQLite.
        op.execute(
            "ALTER TABLE knowledge_chunks ADD COLUMN search_vector tsvector GENERATED ALWAYS AS ("
            "setweight(to_tsvector('english', heading), 'A') || setweight(to_tsvector('english', content), 'B')"
            ") STORED"
        )
        op.execute("CREATE INDEX ix_knowledge_chunks_search_vector ON knowledge_chunks USING gin (search_vector)")
    else:
        op.execute(
            "CREATE VIRTUAL TABLE knowledge_chunks_fts USING fts5(heading, content, content='knowledge_chunks', "
            "content_rowid='row_id', tokenize='porter unicode61 remove_diacritics 2')"
        )
        op.execute(
            "CREATE TRIGGER knowledge_chunks_fts_insert AFTER INSERT ON knowledge_chunks BEGIN "
            "INSERT INTO knowledge_chunks_fts(rowid, heading, content) VALUES (new.row_id, new.heading, new.content); "
            "END"
        )
        op.execute(
            "CREATE TRIGGER knowledge_chunks_fts_delete AFTER DELETE ON knowledge_chunks BEGIN "
            "INSERT INTO knowledge_chunks_fts(knowledge_chunks_fts, rowid, heading, content) "
            "VALUES ('delete', old.row_id, old.heading, old.content); END"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        op.execute("DROP TABLE IF EXISTS knowledge_chunks_fts")
    for table in ("knowledge_chunks", "knowledge_documents", "knowledge_data_sources"):
        op.drop_table(table)
