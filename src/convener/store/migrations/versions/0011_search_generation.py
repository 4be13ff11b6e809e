"""Knowledge search generation: a counter bumped with every change of the chunks, for in-memory search indexes;
on SQLite, an ``fts5vocab`` view of the chunks' FTS5 index from which such an index reads the engine's tokens.

Revision ID: 0011
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "knowledge_search_generation",
        sa.Column("id", sa.Integer, autoincrement=False, nullable=False),
        sa.Column("generation", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_knowledge_search_generation"),
    )
    op.execute("INSERT INTO knowledge_search_generation (id, generation) VALUES (1, 0)")
    if op.get_bind().dialect.name != "postgresql":
        # Every token of every chunk, as FTS5 cut and stemmed it: the index's postings without tokenizing again.
        op.execute("CREATE VIRTUAL TABLE knowledge_chunks_fts_instances USING fts5vocab(knowledge_chunks_fts, instance)")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        op.execute("DROP TABLE IF EXISTS knowledge_chunks_fts_instances")
    op.drop_table("knowledge_search_generation")
