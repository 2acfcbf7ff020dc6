"""Open kernel model: the key's shape becomes the kernel's named dimensions; kernels gain a spec hash.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23

- autotune_kernels.spec_hash: SHA-256 of the kernel's launch-relevant description ('' where
  none is known); a kernel is (name, source_hash, spec_hash). Rows of the 15 catalog kernels
  get the spec hash of their 0.1 description from :data:`SPEC_HASHES_0_1`.
- autotune_searches, autotune_best, autotune_bench_runs: ``dims`` (the text form
  "rows=8192,cols=8192", the kernel's declared order) replaces rows, cols and depth. The 0.1
  rule: matmul_naive, matmul_tiled and matmul_reg -> m=rows, n=cols, k=depth; every other
  kernel -> rows, cols (bench runs: depth > 0 -> m, n, k, else rows, cols). The best's unique key
  uses dims. Within a key higher GB/s was lower median time, so every best stays the best.
- autotune_trials: the check "an ok trial has gbps" becomes "an ok trial has median_ms" (a
  kernel without a bytes objective has no GB/s).

Upgrade is plain SQL, so ``alembic upgrade --sql`` can emit it. Downgrade (the reverse rule)
reads the dims back in Python, so it needs a live connection; it refuses a database holding
results it cannot express in 0005 (dims other than rows,cols or m,n,k; ok trials without GB/s;
kernels that differ only by spec hash).

SPEC_HASHES_0_1 is a literal copy (a migration never imports live code); the same table is in
autotune/interchange/share.py (version-1 exports), and tests/store/test_schema_migrations.py checks that both are
equal and equal to ``autotune.kernel.catalog.get_kernel(name).spec_hash`` of every catalog kernel.

The values are the literal ``autotune.kernel.catalog.get_kernel(name).spec_hash`` of the 15
catalog kernels as the kernel model (commit 619dca1, "Kernel model: kernels described as data")
describes them in kernels/*.toml: the 0.1 kernels, whose source hashes that commit kept.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SPEC_HASHES_0_1 = {
    "copy_row": "63f5973173acba02fafb68ebfa01f4b2ed9c77a5e0a136138b25316cb0ad262f",
    "copy_col": "8d61b1cb96fa894cf804e36bb5bc8470819e560f7aa4204b23edca3c1c75dbf6",
    "naive_row": "126be7790a37738c80cb718c94dcaa018c8b4bf6c16c1f5f6782b942d1747ea0",
    "naive_col": "6a38295c3a3f9b612aa1d9ce1ef7271dbad83a7b96bf3116dcdd7ae84c09e19f",
    "unroll_row": "3b2c799a83ce1ff2994ed27a31f2b4315b81d6ea21ccc6459236ac6ab2873f9d",
    "unroll_col": "0771aa065c877cd91035d34b00f0f819bbb6de0c6f0f657b8f152260402f8d42",
    "diagonal_row": "a0b86018beb1d4819a309ce6fcaf18ce9297b11f92b71236f53fc1e691b301e5",
    "diagonal_col": "4a5aab626b0520644083d1093b0ecaae1d0321da50ab05ca8a295e21803700ef",
    "smem": "80e121e6a615bebf86b5b281dd69d936c0961d79b5abd9bcd656b8390b0a1cfa",
    "smem_pad": "b51d6dc09efa2551f925c7df3eb261c1250ebf88617b6aa0997902845debc9ac",
    "smem_unroll_pad": "4f4992827f4975f92e7f295cb732408d1d1c8a3e0c52eca1e4697d95f6580a8e",
    "smem_vec": "29cdf285fb637631b710e234a5de22bef5895ff15dd70e386113d70a8da95ec9",
    "matmul_naive": "474a73bf3ce84f92723ec83068773353443259a23b65c25ca9334864e3126805",
    "matmul_tiled": "a7156bf3ad2b6ba9bab2f275036ef96865b9097b57805dcb422738bb1e975f05",
    "matmul_reg": "e1eaf6785d6024cad1ad958d2d5ba96317a8100e45ea5b3c04d0885189b0a330",
}
"""Spec hash of each catalog kernel's 0.1 description (see the module docstring)."""

MATMUL_0_1 = ("matmul_naive", "matmul_tiled", "matmul_reg")
"""The 0.1 kernels whose rows, cols, depth were M, N, K."""

_KEY_TABLES = ("autotune_searches", "autotune_best")
_OLD_BEST_KEY = ["device_id", "kernel_id", "rows", "cols", "dtype", "nvcc_version", "compile_flags", "depth"]
_NEW_BEST_KEY = ["device_id", "kernel_id", "dims", "dtype", "nvcc_version", "compile_flags"]


def _text(column: str) -> str:
    return f"CAST({column} AS VARCHAR(20))"


_RC = f"'rows=' || {_text('rows')} || ',cols=' || {_text('cols')}"
_MNK = f"'m=' || {_text('rows')} || ',n=' || {_text('cols')} || ',k=' || {_text('depth')}"
_MATMUL_IDS = ("(SELECT id FROM autotune_kernels WHERE name IN ("
               + ", ".join(f"'{name}'" for name in MATMUL_0_1) + "))")


def upgrade() -> None:
    with op.batch_alter_table("autotune_kernels") as batch:
        batch.add_column(sa.Column("spec_hash", sa.String(64), nullable=False, server_default=""))
        batch.drop_constraint("uq_autotune_kernels__name_source_hash", type_="unique")
        batch.create_unique_constraint("uq_autotune_kernels__name_source_hash_spec_hash",
                                       ["name", "source_hash", "spec_hash"])
    for name, digest in SPEC_HASHES_0_1.items():
        op.execute(f"UPDATE autotune_kernels SET spec_hash = '{digest}' WHERE name = '{name}'")

    for table in (*_KEY_TABLES, "autotune_bench_runs"):
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("dims", sa.String(1024), nullable=True))
    for table in _KEY_TABLES:
        op.execute(f"UPDATE {table} SET dims = CASE WHEN kernel_id IN {_MATMUL_IDS} THEN {_MNK} ELSE {_RC} END")
    op.execute(f"UPDATE autotune_bench_runs SET dims = CASE WHEN depth > 0 THEN {_MNK} ELSE {_RC} END")

    with op.batch_alter_table("autotune_best") as batch:
        batch.drop_constraint("uq_autotune_best__key", type_="unique")
    for table in (*_KEY_TABLES, "autotune_bench_runs"):
        with op.batch_alter_table(table) as batch:
            batch.alter_column("dims", existing_type=sa.String(1024), nullable=False)
            for column in ("rows", "cols", "depth"):
                batch.drop_column(column)
    with op.batch_alter_table("autotune_best") as batch:
        batch.create_unique_constraint("uq_autotune_best__key", _NEW_BEST_KEY)

    with op.batch_alter_table("autotune_trials") as batch:
        batch.drop_constraint("ck_autotune_trials__ok_has_gbps", type_="check")
        batch.create_check_constraint("ck_autotune_trials__ok_has_median_ms",
                                      "status != 'ok' OR median_ms IS NOT NULL")


def _old_shape(dims: str) -> tuple[int, int, int] | None:
    """``(rows, cols, depth)`` of a dims text by the reverse 0.1 rule, or ``None`` when it has no
    0005 form."""
    try:
        pairs = [item.split("=") for item in dims.split(",")]
        names, values = [p[0] for p in pairs], [int(p[1]) for p in pairs]
    except (ValueError, IndexError):
        return None
    if names == ["rows", "cols"]:
        return values[0], values[1], 0
    if names == ["m", "n", "k"]:
        return values[0], values[1], values[2]
    return None


def _refuse(problem: str) -> None:
    raise RuntimeError(f"cannot downgrade to 0005: {problem}; export or delete those results first")


def downgrade() -> None:
    bind = op.get_bind()
    rows = {}
    for table in (*_KEY_TABLES, "autotune_bench_runs"):
        rows[table] = bind.execute(sa.text(f"SELECT id, dims FROM {table}")).all()
        bad = sorted({dims for _, dims in rows[table] if _old_shape(dims) is None})
        if bad:
            _refuse(f"{table} holds dims with no rows/cols/depth form ({', '.join(bad[:3])})")
    if bind.execute(sa.text("SELECT count(*) FROM autotune_trials WHERE status = 'ok' AND gbps IS NULL")).scalar():
        _refuse("ok trials without GB/s (kernels without a bytes objective)")
    if bind.execute(sa.text("SELECT count(*) FROM (SELECT name, source_hash FROM autotune_kernels "
                            "GROUP BY name, source_hash HAVING count(*) > 1) AS twins")).scalar():
        _refuse("kernels that differ only by their spec hash")

    with op.batch_alter_table("autotune_trials") as batch:
        batch.drop_constraint("ck_autotune_trials__ok_has_median_ms", type_="check")
        batch.create_check_constraint("ck_autotune_trials__ok_has_gbps", "status != 'ok' OR gbps IS NOT NULL")

    with op.batch_alter_table("autotune_best") as batch:
        batch.drop_constraint("uq_autotune_best__key", type_="unique")
    for table in (*_KEY_TABLES, "autotune_bench_runs"):
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("rows", sa.Integer(), nullable=True))
            batch.add_column(sa.Column("cols", sa.Integer(), nullable=True))
            batch.add_column(sa.Column("depth", sa.Integer(), nullable=False, server_default="0"))
        update = sa.text(f"UPDATE {table} SET rows = :rows, cols = :cols, depth = :depth WHERE id = :id")
        for row_id, dims in rows[table]:
            r, c, d = _old_shape(dims)
            bind.execute(update, {"rows": r, "cols": c, "depth": d, "id": row_id})
        with op.batch_alter_table(table) as batch:
            batch.alter_column("rows", existing_type=sa.Integer(), nullable=False)
            batch.alter_column("cols", existing_type=sa.Integer(), nullable=False)
            batch.drop_column("dims")
    with op.batch_alter_table("autotune_best") as batch:
        batch.create_unique_constraint("uq_autotune_best__key", _OLD_BEST_KEY)

    with op.batch_alter_table("autotune_kernels") as batch:
        batch.drop_constraint("uq_autotune_kernels__name_source_hash_spec_hash", type_="unique")
        batch.create_unique_constraint("uq_autotune_kernels__name_source_hash", ["name", "source_hash"])
        batch.drop_column("spec_hash")
