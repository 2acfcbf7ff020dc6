"""`autotune bench` on the GPU: every kind of line is measured and stored."""

import pytest

from autotune.store.opening import open_results
from sqlalchemy import select
from typer.testing import CliRunner

from autotune.cli import app
from autotune.store.models import BenchRow

pytestmark = pytest.mark.gpu


def test_bench_measures_and_stores_every_kind_of_line(tmp_path):
    db = f"sqlite:///{tmp_path / 'bench.db'}"
    r = CliRunner().invoke(app, ["bench", "--rows", "1000", "--cols", "3001", "--kernel", "copy_row",
                                 "--kernel", "smem_pad", "--kernel", "naive_col", "--db", db])
    assert r.exit_code == 0, r.output
    assert "stored as bench run" in r.output and "L2: rotating buffers" in r.output
    with open_results(db).session() as s:
        lines = s.scalars(select(BenchRow).order_by(BenchRow.position)).all()
        kinds = [l.kind for l in lines]
        assert kinds[0] == "memcpy" and kinds.count("kernel") == 3 and "cpu" in kinds and kinds.count("transfer") == 4
        for line in lines:
            assert line.note is None, line.note
            assert line.median_ms > 0 and line.gbps > 0
        for line in (l for l in lines if l.kind == "kernel"):
            assert 0 < line.occupancy <= 1 and line.registers > 0
        smem = next(l for l in lines if l.name == "smem_pad")
        assert smem.shared_bytes == 32 * 33 * 4
