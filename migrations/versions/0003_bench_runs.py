"""Stored `autotune bench` runs: one row per run, one per line of its table.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "autotune_bench_runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("device_id", sa.Integer(), nullable=False),
        sa.Column("rows", sa.Integer(), nullable=False),
        sa.Column("cols", sa.Integer(), nullable=False),
        sa.Column("dtype", sa.String(32), nullable=False),
        sa.Column("nvcc_version", sa.String(64), nullable=False),
        sa.Column("memcpy_gbps", sa.Float(), nullable=False),
        sa.Column("l2_mode", sa.String(16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["device_id"], ["autotune_devices.id"],
                                name="fk_autotune_bench_runs__device_id__autotune_devices"),
        sa.PrimaryKeyConstraint("id", name="pk_autotune_bench_runs"),
    )
    op.create_index("ix_autotune_bench_runs__device_id", "autotune_bench_runs", ["device_id"])
    op.create_table(
        "autotune_bench_rows",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("config_key", sa.String(1024), nullable=True),
        sa.Column("source", sa.String(16), nullable=True),
        sa.Column("median_ms", sa.Float(), nullable=True),
        sa.Column("gbps", sa.Float(), nullable=True),
        sa.Column("pct_memcpy", sa.Float(), nullable=True),
        sa.Column("registers", sa.Integer(), nullable=True),
        sa.Column("shared_bytes", sa.Integer(), nullable=True),
        sa.Column("occupancy", sa.Float(), nullable=True),
        sa.Column("note", sa.Text(), nullable=True),
        sa.CheckConstraint("kind IN ('memcpy', 'kernel', 'cpu', 'transfer')",
                           name="ck_autotune_bench_rows__kind_valid"),
        sa.ForeignKeyConstraint(["run_id"], ["autotune_bench_runs.id"],
                                name="fk_autotune_bench_rows__run_id__autotune_bench_runs"),
        sa.PrimaryKeyConstraint("id", name="pk_autotune_bench_rows"),
    )
    op.create_index("ix_autotune_bench_rows__run_id", "autotune_bench_rows", ["run_id"])


def downgrade() -> None:
    op.drop_index("ix_autotune_bench_rows__run_id", "autotune_bench_rows")
    op.drop_table("autotune_bench_rows")
    op.drop_index("ix_autotune_bench_runs__device_id", "autotune_bench_runs")
    op.drop_table("autotune_bench_runs")
