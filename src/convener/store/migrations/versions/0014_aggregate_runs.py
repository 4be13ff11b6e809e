"""Evaluation aggregates: the runs of an evaluation in a column of their own (``runs``), beside the metrics' sums
(``body``), so that a result completing reads and rewrites only the metrics, whatever the number of the
evaluation's runs; filled for evaluations whose results have no row yet.

Rows kept since 0010 move their runs in one statement. A store upgraded from before 0010 has results and no rows
(0010 makes the table, this fills it): their rows are computed from the results by the code that keeps them.

Revision ID: 0014
Revises: 0013
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

Json = sa.JSON().with_variant(JSONB(), "postgresql")
BATCH = 200
"""Evaluations rebuilt per round: their keys are read a batch at a time, so a large store is never listed whole."""


def upgrade() -> None:
    with op.batch_alter_table("ces_evaluation_aggregates") as batch:
        batch.add_column(sa.Column("runs", Json, nullable=False, server_default="[]"))
    connection = op.get_bind()
    if connection.dialect.name == "postgresql":
        op.execute("UPDATE ces_evaluation_aggregates "
                   "SET runs = COALESCE(body -> 'runs', '[]'::jsonb), body = body - 'runs'")
    else:
        op.execute("UPDATE ces_evaluation_aggregates SET runs = COALESCE(json_extract(body, '$.runs'), '[]'), "
                   "body = json_remove(body, '$.runs')")
    _fill_missing(connection)


def _fill_missing(connection: sa.Connection) -> None:
    # The sums are those the running code keeps (convener.ces.evaluation.aggregates), so it computes them here too:
    # a second definition of the metrics would be a second thing to keep equal.
    from convener.ces.evaluation.aggregates import rebuild

    results = sa.table("ces_evaluation_results", sa.column("app_pk", sa.Integer),
                       sa.column("evaluation_id", sa.String))
    rows = sa.table("ces_evaluation_aggregates", sa.column("app_pk", sa.Integer),
                    sa.column("evaluation_id", sa.String))
    after: tuple[int, str] = (-1, "")
    while True:
        keys = [(int(app_pk), str(evaluation_id)) for app_pk, evaluation_id in connection.execute(
            sa.select(results.c.app_pk, results.c.evaluation_id).distinct().where(sa.or_(
                results.c.app_pk > after[0], sa.and_(results.c.app_pk == after[0], results.c.evaluation_id > after[1])))
            .order_by(results.c.app_pk, results.c.evaluation_id).limit(BATCH)).all()]
        if not keys:
            return
        present = {(int(app_pk), str(evaluation_id)) for app_pk, evaluation_id in connection.execute(
            sa.select(rows.c.app_pk, rows.c.evaluation_id).where(
                sa.tuple_(rows.c.app_pk, rows.c.evaluation_id).in_(keys))).all()}
        rebuild(connection, [key for key in keys if key not in present])
        after = keys[-1]


def downgrade() -> None:
    connection = op.get_bind()
    if connection.dialect.name == "postgresql":
        op.execute("UPDATE ces_evaluation_aggregates SET body = jsonb_set(body, '{runs}', runs)")
    else:
        op.execute("UPDATE ces_evaluation_aggregates SET body = json_set(body, '$.runs', json(runs))")
    with op.batch_alter_table("ces_evaluation_aggregates") as batch:
        batch.drop_column("runs")
