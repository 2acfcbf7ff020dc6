"""``autotune examples`` (autotune/cli/info.py): the shipped examples copied out for a pip
install; ``autotune info`` is tested in tests/test_cli.py and tests/cli/test_output.py."""

from __future__ import annotations

from typer.testing import CliRunner

from autotune.cli import app
from autotune.resources import data_dir

runner = CliRunner()


def test_examples_are_copied_into_a_new_folder_and_never_over_one(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, ["examples"])
    assert r.exit_code == 0 and r.output == "copied the examples to examples: app, histogram, reduction, softmax\n"
    shipped = sorted(p.relative_to(data_dir("examples")) for p in data_dir("examples").rglob("*")
                     if "__pycache__" not in p.parts and p.suffix != ".pyc")
    assert sorted(p.relative_to(tmp_path / "examples") for p in (tmp_path / "examples").rglob("*")) == shipped
    assert (tmp_path / "examples" / "reduction" / "reduce.toml").read_bytes() == \
        (data_dir("examples") / "reduction" / "reduce.toml").read_bytes()
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "keep.txt").write_text("mine")
    for target, said in (("mine", "error: mine exists already; give a folder that does not exist"),
                         ("no/x", "error: cannot copy the examples to no/x: the folder no does not exist")):
        r = runner.invoke(app, ["examples", target])
        assert r.exit_code == 2 and r.output.startswith(said), r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["examples", "mine"]
    assert [p.name for p in (tmp_path / "mine").iterdir()] == ["keep.txt"]
