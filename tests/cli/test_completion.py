"""``autotune --install-completion`` (autotune/cli/completion.py, issue 41 item 11): where Typer's
installer cannot write (a read-only home, a file where a folder is needed, an unknown shell),
one ``error:`` line, exit 2, and no file changed; where it can, it installs as before."""

from __future__ import annotations

import os

import pytest
from typer.testing import CliRunner

import autotune.cli.completion
from autotune.cli import app

runner = CliRunner()


def _files(home):
    return sorted((str(p.relative_to(home)), p.read_bytes() if p.is_file() else None) for p in home.rglob("*"))


@pytest.fixture
def home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text("# my own settings\nalias ll='ls -l'\n")
    monkeypatch.setenv("HOME", str(home))
    return home


def install(shell: str):
    """``autotune --install-completion`` run from ``shell`` (as shellingham would detect it)."""
    real = autotune.cli.completion._shell
    autotune.cli.completion._shell = lambda value: shell
    try:
        return runner.invoke(app, ["--install-completion"], prog_name="autotune")
    finally:
        autotune.cli.completion._shell = real


def read_only(monkeypatch, folder):
    """``folder`` read-only, for root too (root writes anywhere: the check asks os.access)."""
    if os.geteuid() == 0:
        real = os.access
        monkeypatch.setattr(autotune.cli.completion.os, "access",
                            lambda p, mode: False if str(p) == str(folder) or str(p).startswith(f"{folder}/")
                            else real(p, mode))
    else:
        folder.chmod(0o555)


def assert_refused(result, message, home, before):
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot install shell completion: "), result.output
    assert message in lines[0], result.output
    assert "Traceback" not in result.output
    assert _files(home) == before


def test_a_read_only_home_is_refused_and_nothing_changes(home, monkeypatch):
    (home / ".bashrc").chmod(0o444)
    before = _files(home)
    read_only(monkeypatch, home)
    result = install("bash")
    assert_refused(result, f"{home / '.bashrc'} is not writable", home, before)


def test_a_read_only_folder_under_a_writable_rc_file_is_refused_before_the_rc_file_is_written(home, monkeypatch):
    """Typer rewrites ~/.bashrc before it writes the script: the script's folder is checked
    first, so ~/.bashrc is left as it was."""
    (home / ".bash_completions").mkdir()
    before = _files(home)
    read_only(monkeypatch, home / ".bash_completions")
    result = install("bash")
    assert_refused(result, f"the folder {home / '.bash_completions'} is not writable", home, before)


def test_a_file_where_a_folder_is_needed(home):
    (home / ".bash_completions").write_text("not a folder\n")
    before = _files(home)
    result = install("bash")
    assert_refused(result, f"{home / '.bash_completions'} is not a folder", home, before)


def test_a_folder_where_the_rc_file_is(home):
    (home / ".bashrc").unlink()
    (home / ".bashrc").mkdir()
    before = _files(home)
    result = install("bash")
    assert_refused(result, f"{home / '.bashrc'} is not a regular file", home, before)


def test_zsh_and_fish_targets_are_checked_too(home):
    (home / ".zfunc").write_text("")
    (home / ".config").write_text("")
    before = _files(home)
    assert_refused(install("zsh"), f"{home / '.zfunc'} is not a folder", home, before)
    assert_refused(install("fish"), f"{home / '.config'} is not a folder", home, before)


@pytest.mark.parametrize("shell, message", [(None, "the shell could not be detected"),
                                            ("tcsh", "shell 'tcsh' is not supported; allowed: bash, zsh, fish")])
def test_an_unknown_or_undetected_shell_is_one_error_line(home, shell, message):
    before = _files(home)
    if shell is None:
        result = runner.invoke(app, ["--install-completion"], prog_name="autotune",
                               env={"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"})
    else:
        result = install(shell)
    assert_refused(result, message, home, before)


def test_a_write_that_fails_anyway_is_one_error_line(home, monkeypatch):
    """A fault the checks cannot see (a full disk) is still one line, exit 2."""
    import errno
    from pathlib import Path

    def full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(self))

    monkeypatch.setattr(Path, "write_text", full)
    result = install("bash")
    assert result.exit_code == 2 and result.output.strip() == (
        f"error: cannot install shell completion: {home / '.bashrc'}: No space left on device"), result.output


def test_where_it_can_write_it_installs(home):
    result = install("bash")
    assert result.exit_code == 0, result.output
    script = home / ".bash_completions" / "autotune.sh"
    assert "bash completion installed in" in result.output and script.is_file() and script.read_text()
    assert (home / ".bashrc").read_text().startswith("# my own settings\n")


def _complete(*words: str) -> list[str]:
    line = " ".join(("autotune", *words))
    r = runner.invoke(app, [], prog_name="autotune",
                      env={"_AUTOTUNE_COMPLETE": "complete_bash", "COMP_WORDS": line, "COMP_CWORD": str(len(words))})
    return r.stdout.split()


def test_names_and_values_complete_past_the_options(db_url, monkeypatch, device_info):
    """Issue 49 item 9: kernels after dispatch and tune-shapes, workload names after plan, tune
    and export (from the database, read only), and the values of --objective and --device."""
    from autotune.errors import no_driver
    from autotune.measure import device as devices
    from workload_fixtures import record_app

    assert _complete("dispatch", "smem_p") == ["smem_pad"]
    assert _complete("tune-shapes", "matmul_w") == ["matmul_warp"]
    assert _complete("search", "--objective", "e") == ["energy", "edp"]
    assert _complete("search", "--objective", "time") == ["time", "time,energy"]
    monkeypatch.setattr(devices, "device_count", lambda: 2)
    assert _complete("search", "--device", "") == ["0", "1", "all"]
    assert _complete("search", "--device", "0,") == ["0,1"]
    assert _complete("tune", "app", "--device", "a") == ["all"]
    assert _complete("sweep", "--device", "") == ["0", "1"]

    def no_gpu():
        raise no_driver("libcuda.so.1: cannot open shared object file")

    monkeypatch.setattr(devices, "device_count", no_gpu)
    assert _complete("plan", "app", "--device", "") == ["0"]  # no driver: the first ordinal, no error
    assert _complete("plan", "--db", db_url, "") == []  # no database yet: nothing, and none created
    assert not os.path.exists(db_url.removeprefix("sqlite:///"))
    record_app(monkeypatch, device_info, db_url)
    record_app(monkeypatch, device_info, db_url, name="apple", calls=(1, 0, 0))
    monkeypatch.setenv("AUTOTUNE_DB", db_url)
    for command in ("plan", "tune", "export"):
        assert _complete(command, "ap") == ["app", "apple"], command
    assert _complete("plan", "--db", db_url, "appl") == ["apple"]
