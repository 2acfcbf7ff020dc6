"""Workloads: the launches a program made (recorded), and the tunings of them.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24

- autotune_workloads: one row per named recording (``autotune.record("NAME")`` or
  ``AUTOTUNE_RECORD=NAME``).
- autotune_workload_calls: what a recording process counted, one row per problem (device
  model, kernel, dims, dtype) and batch: the calls, and the GPU time of the sampled ones. A
  batch is written in one transaction (never half); (run, batch, problem) is unique, so a
  batch written twice counts once.
- autotune_workload_tunings: one ``autotune tune NAME`` on one device model, with its budget;
  resumed until finished.
- autotune_workload_results: what a tuning did to each problem: its status and reason, the
  budget it got and spent, the config chosen, and the GPU time per call measured at the
  default config and at the tuned one.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TUNING_STATUSES = "'running', 'finished', 'interrupted', 'failed'"
_RESULT_STATUSES = "'pending', 'tuned', 'skipped', 'failed', 'interrupted'"


def _time(name: str, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "autotune_workloads",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        _time("created_at"),
        sa.PrimaryKeyConstraint("id", name="pk_autotune_workloads"),
        sa.UniqueConstraint("name", name="uq_autotune_workloads__name"),
    )
    op.create_table(
        "autotune_workload_calls",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("workload_id", sa.Integer(), nullable=False),
        sa.Column("run", sa.String(length=32), nullable=False),
        sa.Column("batch", sa.Integer(), nullable=False),
        sa.Column("device_id", sa.Integer(), nullable=False),
        sa.Column("kernel_id", sa.Integer(), nullable=False),
        sa.Column("kernel_ref", sa.String(length=1024), nullable=False),
        sa.Column("dims", sa.String(length=1024), nullable=False),
        sa.Column("dtype", sa.String(length=32), nullable=False),
        sa.Column("calls", sa.BigInteger(), nullable=False),
        sa.Column("sampled", sa.Integer(), nullable=False),
        sa.Column("sampled_ms", sa.Float(), nullable=False),
        _time("created_at"),
        sa.CheckConstraint("calls >= 0 AND sampled >= 0 AND sampled_ms >= 0",
                           name="ck_autotune_workload_calls__counts_valid"),
        sa.ForeignKeyConstraint(["workload_id"], ["autotune_workloads.id"],
                                name="fk_autotune_workload_calls__workload_id__autotune_workloads"),
        sa.ForeignKeyConstraint(["device_id"], ["autotune_devices.id"],
                                name="fk_autotune_workload_calls__device_id__autotune_devices"),
        sa.ForeignKeyConstraint(["kernel_id"], ["autotune_kernels.id"],
                                name="fk_autotune_workload_calls__kernel_id__autotune_kernels"),
        sa.PrimaryKeyConstraint("id", name="pk_autotune_workload_calls"),
        sa.UniqueConstraint("run", "batch", "device_id", "kernel_id", "dims", "dtype",
                            name="uq_autotune_workload_calls__batch"),
    )
    op.create_index("ix_autotune_workload_calls__workload_id", "autotune_workload_calls", ["workload_id"])
    op.create_table(
        "autotune_workload_tunings",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("workload_id", sa.Integer(), nullable=False),
        sa.Column("device_id", sa.Integer(), nullable=False),
        sa.Column("budget_s", sa.Float(), nullable=False),
        sa.Column("gpus", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("wall_s", sa.Float(), nullable=False),
        _time("started_at"),
        _time("finished_at", nullable=True),
        sa.CheckConstraint(f"status IN ({_TUNING_STATUSES})", name="ck_autotune_workload_tunings__status_valid"),
        sa.ForeignKeyConstraint(["workload_id"], ["autotune_workloads.id"],
                                name="fk_autotune_workload_tunings__workload_id__autotune_workloads"),
        sa.ForeignKeyConstraint(["device_id"], ["autotune_devices.id"],
                                name="fk_autotune_workload_tunings__device_id__autotune_devices"),
        sa.PrimaryKeyConstraint("id", name="pk_autotune_workload_tunings"),
    )
    op.create_index("ix_autotune_workload_tunings__workload_id", "autotune_workload_tunings", ["workload_id"])
    op.create_table(
        "autotune_workload_results",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tuning_id", sa.Integer(), nullable=False),
        sa.Column("kernel_id", sa.Integer(), nullable=False),
        sa.Column("kernel_ref", sa.String(length=1024), nullable=False),
        sa.Column("dims", sa.String(length=1024), nullable=False),
        sa.Column("dtype", sa.String(length=32), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("strategy", sa.String(length=64), nullable=True),
        sa.Column("budget_s", sa.Float(), nullable=False),
        sa.Column("spent_s", sa.Float(), nullable=False),
        sa.Column("trials", sa.Integer(), nullable=False),
        sa.Column("gpu_ordinal", sa.Integer(), nullable=True),
        sa.Column("config_key", sa.String(length=1024), nullable=True),
        sa.Column("default_ms", sa.Float(), nullable=True),
        sa.Column("tuned_ms", sa.Float(), nullable=True),
        _time("updated_at"),
        sa.CheckConstraint(f"status IN ({_RESULT_STATUSES})", name="ck_autotune_workload_results__status_valid"),
        sa.ForeignKeyConstraint(["tuning_id"], ["autotune_workload_tunings.id"],
                                name="fk_autotune_workload_results__tuning_id"),
        sa.ForeignKeyConstraint(["kernel_id"], ["autotune_kernels.id"],
                                name="fk_autotune_workload_results__kernel_id__autotune_kernels"),
        sa.PrimaryKeyConstraint("id", name="pk_autotune_workload_results"),
        sa.UniqueConstraint("tuning_id", "kernel_id", "dims", "dtype", name="uq_autotune_workload_results__problem"),
    )
    op.create_index("ix_autotune_workload_results__tuning_id", "autotune_workload_results", ["tuning_id"])


def downgrade() -> None:
    op.drop_index("ix_autotune_workload_results__tuning_id", table_name="autotune_workload_results")
    op.drop_table("autotune_workload_results")
    op.drop_index("ix_autotune_workload_tunings__workload_id", table_name="autotune_workload_tunings")
    op.drop_table("autotune_workload_tunings")
    op.drop_index("ix_autotune_workload_calls__workload_id", table_name="autotune_workload_calls")
    op.drop_table("autotune_workload_calls")
    op.drop_table("autotune_workloads")
