"""Initial schema: devices, kernels, searches, trials, best.

Revision ID: 0001
Revises:
Create Date: 2025-11-22

Hand-written; constraint names follow the naming convention of autotune/models.py
(``pk_<table>``, ``fk_<table>__<column>__<referred table>``, ``ix_<table>__<columns>``,
``ck_<table>__<name>``; the two wide unique keys have short explicit names).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TRIAL_STATUSES = "'ok', 'compile_error', 'resources', 'launch_error', 'wrong_result'"
SEARCH_STATUSES = "'running', 'finished', 'interrupted', 'failed'"


def _key_columns() -> list[sa.Column]:
    """Shape, dtype and toolchain columns shared by searches and best."""
    return [
        sa.Column("rows", sa.Integer(), nullable=False),
        sa.Column("cols", sa.Integer(), nullable=False),
        sa.Column("dtype", sa.String(32), nullable=False),
        sa.Column("nvcc_version", sa.String(64), nullable=False),
        sa.Column("compile_flags", sa.String(1024), nullable=False),
    ]


def upgrade() -> None:
    op.create_table(
        "autotune_devices",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("compute_capability", sa.String(16), nullable=False),
        sa.Column("sm_count", sa.Integer(), nullable=False),
        sa.Column("total_memory", sa.BigInteger(), nullable=False),
        sa.Column("driver_version", sa.String(32), nullable=False),
        sa.Column("cuda_version", sa.String(32), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_autotune_devices"),
        sa.UniqueConstraint(
            "name", "compute_capability", "sm_count", "total_memory", "driver_version",
            "cuda_version", name="uq_autotune_devices__identity",
        ),
    )
    op.create_table(
        "autotune_kernels",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("source_hash", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_autotune_kernels"),
        sa.UniqueConstraint("name", "source_hash", name="uq_autotune_kernels__name_source_hash"),
    )
    op.create_table(
        "autotune_searches",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("device_id", sa.Integer(), nullable=False),
        sa.Column("kernel_id", sa.Integer(), nullable=False),
        *_key_columns(),
        sa.Column("study_name", sa.String(1024), nullable=False),
        sa.Column("sampler", sa.String(64), nullable=False),
        sa.Column("seed", sa.Integer(), nullable=True),
        sa.Column("memcpy_gbps", sa.Float(), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_autotune_searches"),
        sa.ForeignKeyConstraint(
            ["device_id"], ["autotune_devices.id"],
            name="fk_autotune_searches__device_id__autotune_devices",
        ),
        sa.ForeignKeyConstraint(
            ["kernel_id"], ["autotune_kernels.id"],
            name="fk_autotune_searches__kernel_id__autotune_kernels",
        ),
        sa.CheckConstraint(
            f"status IN ({SEARCH_STATUSES})", name="ck_autotune_searches__status_valid"
        ),
    )
    op.create_index("ix_autotune_searches__device_id", "autotune_searches", ["device_id"])
    op.create_index("ix_autotune_searches__kernel_id", "autotune_searches", ["kernel_id"])
    op.create_table(
        "autotune_trials",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("search_id", sa.Integer(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("config_key", sa.String(1024), nullable=False),
        sa.Column("macros", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("median_ms", sa.Float(), nullable=True),
        sa.Column("min_ms", sa.Float(), nullable=True),
        sa.Column("max_ms", sa.Float(), nullable=True),
        sa.Column("gbps", sa.Float(), nullable=True),
        sa.Column("pct_memcpy", sa.Float(), nullable=True),
        sa.Column("registers", sa.Integer(), nullable=True),
        sa.Column("shared_bytes", sa.Integer(), nullable=True),
        sa.Column("launches", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_autotune_trials"),
        sa.ForeignKeyConstraint(
            ["search_id"], ["autotune_searches.id"],
            name="fk_autotune_trials__search_id__autotune_searches",
        ),
        sa.CheckConstraint(
            f"status IN ({TRIAL_STATUSES})", name="ck_autotune_trials__status_valid"
        ),
        sa.CheckConstraint(
            "status != 'ok' OR gbps IS NOT NULL", name="ck_autotune_trials__ok_has_gbps"
        ),
    )
    op.create_index("ix_autotune_trials__search_id", "autotune_trials", ["search_id"])
    op.create_table(
        "autotune_best",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("device_id", sa.Integer(), nullable=False),
        sa.Column("kernel_id", sa.Integer(), nullable=False),
        *_key_columns(),
        sa.Column("trial_id", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_autotune_best"),
        sa.ForeignKeyConstraint(
            ["device_id"], ["autotune_devices.id"],
            name="fk_autotune_best__device_id__autotune_devices",
        ),
        sa.ForeignKeyConstraint(
            ["kernel_id"], ["autotune_kernels.id"],
            name="fk_autotune_best__kernel_id__autotune_kernels",
        ),
        sa.ForeignKeyConstraint(
            ["trial_id"], ["autotune_trials.id"],
            name="fk_autotune_best__trial_id__autotune_trials",
        ),
        sa.UniqueConstraint(
            "device_id", "kernel_id", "rows", "cols", "dtype", "nvcc_version", "compile_flags",
            name="uq_autotune_best__key",
        ),
    )
    op.create_index("ix_autotune_best__trial_id", "autotune_best", ["trial_id"])


def downgrade() -> None:
    op.drop_index("ix_autotune_best__trial_id", table_name="autotune_best")
    op.drop_table("autotune_best")
    op.drop_index("ix_autotune_trials__search_id", table_name="autotune_trials")
    op.drop_table("autotune_trials")
    op.drop_index("ix_autotune_searches__kernel_id", table_name="autotune_searches")
    op.drop_index("ix_autotune_searches__device_id", table_name="autotune_searches")
    op.drop_table("autotune_searches")
    op.drop_table("autotune_kernels")
    op.drop_table("autotune_devices")
