"""Matrix products: the K dimension in every key, GFLOP/s figures, vendor bench lines.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22

- autotune_searches.depth, autotune_best.depth, autotune_bench_runs.depth: K of a matrix
  product C[M,N] = A[M,K] @ B[K,N] (rows = M, cols = N); 0 for transposes and copies, the
  server default, so every existing row keeps its meaning. The best's unique key gains it.
- autotune_trials.gflops, autotune_bench_rows.gflops: 2 * M * N * K / time of a product, GFLOP/s.
- autotune_bench_runs.memcpy_gbps may be NULL (a product's bench has no memcpy line);
  autotune_bench_rows.kind may be 'vendor' (a vendor library's product, e.g. cuBLAS).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_BEST_KEY = ["device_id", "kernel_id", "rows", "cols", "dtype", "nvcc_version", "compile_flags"]
_KINDS = "kind IN ('memcpy', 'kernel', 'cpu', 'transfer'{})"


def upgrade() -> None:
    with op.batch_alter_table("autotune_searches") as batch:
        batch.add_column(sa.Column("depth", sa.Integer(), nullable=False, server_default="0"))
    with op.batch_alter_table("autotune_trials") as batch:
        batch.add_column(sa.Column("gflops", sa.Float(), nullable=True))
    with op.batch_alter_table("autotune_best") as batch:
        batch.add_column(sa.Column("depth", sa.Integer(), nullable=False, server_default="0"))
        batch.drop_constraint("uq_autotune_best__key", type_="unique")
        batch.create_unique_constraint("uq_autotune_best__key", [*_BEST_KEY, "depth"])
    with op.batch_alter_table("autotune_bench_runs") as batch:
        batch.add_column(sa.Column("depth", sa.Integer(), nullable=False, server_default="0"))
        batch.alter_column("memcpy_gbps", existing_type=sa.Float(), nullable=True)
    with op.batch_alter_table("autotune_bench_rows") as batch:
        batch.add_column(sa.Column("gflops", sa.Float(), nullable=True))
        batch.drop_constraint("ck_autotune_bench_rows__kind_valid", type_="check")
        batch.create_check_constraint("ck_autotune_bench_rows__kind_valid", _KINDS.format(", 'vendor'"))


def downgrade() -> None:
    with op.batch_alter_table("autotune_bench_rows") as batch:
        batch.drop_constraint("ck_autotune_bench_rows__kind_valid", type_="check")
        batch.create_check_constraint("ck_autotune_bench_rows__kind_valid", _KINDS.format(""))
        batch.drop_column("gflops")
    with op.batch_alter_table("autotune_bench_runs") as batch:
        batch.alter_column("memcpy_gbps", existing_type=sa.Float(), nullable=False)
        batch.drop_column("depth")
    with op.batch_alter_table("autotune_best") as batch:
        batch.drop_constraint("uq_autotune_best__key", type_="unique")
        batch.create_unique_constraint("uq_autotune_best__key", _BEST_KEY)
        batch.drop_column("depth")
    with op.batch_alter_table("autotune_trials") as batch:
        batch.drop_column("gflops")
    with op.batch_alter_table("autotune_searches") as batch:
        batch.drop_column("depth")
