"""One study over several GPUs of one model: the device identity is the model; each search
records the physical GPU that measured its trials.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22

- autotune_searches: gpu_uuid ('' where NVML could not read it), gpu_ordinal and
  gpu_pci_bus_id of the GPU that ran the search (one search per GPU worker); filled for
  older searches from their device's UUID.
- autotune_devices: the UUID leaves the device identity (name, compute capability, SMs,
  memory, driver, CUDA). Rows that differed only by UUID are merged into the lowest id;
  where both had a best for the same key, the faster trial's stays.

Plain SQL only, so ``alembic upgrade --sql`` can emit it.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_IDENTITY = ["name", "compute_capability", "sm_count", "total_memory", "driver_version", "cuda_version"]
_BEST_KEY = ["kernel_id", "rows", "cols", "dtype", "nvcc_version", "compile_flags"]


def _keeper(device_id: str) -> str:
    """SQL: the lowest id among the devices of the same model as ``device_id``."""
    same = " AND ".join(f"k.{c} = d.{c}" for c in _IDENTITY)
    return f"(SELECT min(k.id) FROM autotune_devices k JOIN autotune_devices d ON {same} WHERE d.id = {device_id})"


def upgrade() -> None:
    with op.batch_alter_table("autotune_searches") as batch:
        batch.add_column(sa.Column("gpu_uuid", sa.String(64), nullable=False, server_default=""))
        batch.add_column(sa.Column("gpu_ordinal", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("gpu_pci_bus_id", sa.String(32), nullable=False, server_default=""))
    op.execute("UPDATE autotune_searches SET gpu_uuid = (SELECT d.uuid FROM autotune_devices d "
               "WHERE d.id = autotune_searches.device_id)")
    same_key = " AND ".join(f"b.{c} = b2.{c}" for c in _BEST_KEY)
    op.execute(
        "DELETE FROM autotune_best WHERE id IN (SELECT b.id FROM autotune_best b "
        "JOIN autotune_trials t ON t.id = b.trial_id, autotune_best b2 JOIN autotune_trials t2 ON t2.id = b2.trial_id "
        f"WHERE b2.id <> b.id AND {same_key} AND {_keeper('b.device_id')} = {_keeper('b2.device_id')} "
        "AND (t2.gbps > t.gbps OR (t2.gbps = t.gbps AND b2.id < b.id)))")
    for table in ("autotune_best", "autotune_searches", "autotune_bench_runs"):
        op.execute(f"UPDATE {table} SET device_id = {_keeper(f'{table}.device_id')}")
    op.execute(f"DELETE FROM autotune_devices WHERE id <> {_keeper('autotune_devices.id')}")
    with op.batch_alter_table("autotune_devices") as batch:
        batch.drop_constraint("uq_autotune_devices__identity", type_="unique")
        batch.drop_column("uuid")
        batch.create_unique_constraint("uq_autotune_devices__identity", _IDENTITY)


def downgrade() -> None:
    """Back to 0003: devices get an empty UUID (merged rows stay merged); the per-search
    GPU columns are dropped."""
    with op.batch_alter_table("autotune_devices") as batch:
        batch.add_column(sa.Column("uuid", sa.String(64), nullable=False, server_default=""))
        batch.drop_constraint("uq_autotune_devices__identity", type_="unique")
        batch.create_unique_constraint("uq_autotune_devices__identity", [*_IDENTITY, "uuid"])
    with op.batch_alter_table("autotune_searches") as batch:
        for column in ("gpu_pci_bus_id", "gpu_ordinal", "gpu_uuid"):
            batch.drop_column(column)
