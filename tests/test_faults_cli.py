"""The CLI's compilation cache cannot break or betray a command, and Ctrl-C is one line (issue 41, items 4 and 6).

The cache folder is created readable by its owner only; a folder other users may write in, or own, or that is
read-only is not used (one warning line; the command runs without it); a cache whose entries were swapped makes the
command run again without it, in one warning line naming the folder and ``ocokit cache --clear``, with the same
numbers. ``ocokit run`` interrupted by SIGINT exits 130 after one line, with no traceback and no crash.
"""

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import jax
import pytest
from jax.experimental.compilation_cache import compilation_cache
from typer.testing import CliRunner

from ocokit import cli, experiments

from .helpers import register_two_ogd

register_two_ogd("faults-cache", chunk_size=1)

RUN = ["run", "faults-cache", "--T", "6", "--seeds", "1", "--plain"]
_OPTIONS = (
    "jax_compilation_cache_dir",
    "jax_persistent_cache_min_compile_time_secs",
    "jax_compilation_cache_max_size",
    "jax_persistent_cache_min_entry_size_bytes",
)


@pytest.fixture
def cache(monkeypatch, tmp_path):
    """``$OCOKIT_CACHE_DIR`` set to a folder of the test's own (not created); JAX's cache options and its in-process
    cache (which keeps the first folder it opened) are reset before and restored after."""
    saved = {name: getattr(jax.config, name) for name in _OPTIONS}
    jax.config.update("jax_compilation_cache_dir", None)
    compilation_cache.reset_cache()
    folder = tmp_path / "cache"
    monkeypatch.setenv(cli.CACHE_ENV_VAR, str(folder))
    monkeypatch.setattr(cli.console, "width", 1000)
    monkeypatch.setattr(cli.status_console, "width", 1000)
    yield folder
    for name, value in saved.items():
        jax.config.update(name, value)
    compilation_cache.reset_cache()
    jax.clear_caches()
    if folder.exists():
        folder.chmod(0o700)  # a read-only folder of a test: removable again


def _warnings(output: str) -> list[str]:
    return [line for line in output.splitlines() if "warning" in line.lower()]


def _numbers(out: Path) -> dict:
    """summary.json's statistics, without the wall times and the provenance (they differ by design)."""
    algorithms = json.loads((out / "summary.json").read_text())["algorithms"]
    return {
        name: {k: v for k, v in st.items() if k not in ("wall_seconds_per_round", "compile_seconds")}
        for name, st in algorithms.items()
    }


def _run(out: Path):
    result = CliRunner().invoke(cli.app, [*RUN, "--out", str(out)])
    assert result.exit_code == 0, result.output
    return result


@pytest.mark.integration  # runs an experiment through the CLI
def test_the_cache_folder_is_created_readable_by_its_owner_only(cache, tmp_path):
    result = _run(tmp_path / "out")
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    assert list(cache.glob("*-cache")) and not _warnings(result.output)  # used, silently


@pytest.mark.parametrize("mode", [0o770, 0o757, 0o777], ids=["group-writable", "others-writable", "0777"])
@pytest.mark.integration  # runs an experiment through the CLI
def test_a_cache_folder_others_may_write_in_is_not_used(cache, tmp_path, mode):
    cache.mkdir()
    cache.chmod(mode)
    result = _run(tmp_path / "out")
    assert _warnings(result.output) == [
        f"warning: not using the compilation cache {cache}: other users may write in it (chmod go-w, or set "
        "OCOKIT_CACHE_DIR); the command runs without it"
    ]
    assert list(cache.iterdir()) == [] and stat.S_IMODE(cache.stat().st_mode) == mode  # left as it was
    assert jax.config.jax_compilation_cache_dir is None


def test_a_cache_folder_another_user_owns_is_not_used(cache, monkeypatch, capsys):
    cache.mkdir(mode=0o700)
    uid = cache.stat().st_uid
    monkeypatch.setattr(os, "getuid", lambda: uid + 1)
    assert cli._compilation_cache() is None and jax.config.jax_compilation_cache_dir is None
    monkeypatch.undo()
    assert capsys.readouterr().err.strip() == (
        f"warning: not using the compilation cache {cache}: another user owns it; the command runs without it"
    )


@pytest.mark.integration  # runs an experiment through the CLI
def test_a_read_only_cache_folder_is_one_warning_line(cache, tmp_path, monkeypatch):
    cache.mkdir(mode=0o700)
    cache.chmod(0o500)
    if os.geteuid() == 0:  # root writes anywhere but on a read-only file system: as such a folder answers access()
        real = os.access
        monkeypatch.setattr(os, "access", lambda path, mode, **kw: False if Path(path) == cache else real(path, mode))
    result = _run(tmp_path / "out")
    assert _warnings(result.output) == [
        f"warning: not using the compilation cache {cache}: it is read-only; the command runs without it"
    ]
    assert list(cache.iterdir()) == []


@pytest.mark.integration  # runs an experiment through the CLI
def test_a_cache_whose_entries_were_swapped_is_run_again_without_it(cache, tmp_path):
    first = _run(tmp_path / "first")
    assert not _warnings(first.output)
    entries = sorted(cache.glob("*-cache"), key=lambda p: p.stat().st_size)[-2:]  # the sweep and the comparators
    assert len(entries) == 2
    a, b = (p.read_bytes() for p in entries)
    entries[0].write_bytes(b)
    entries[1].write_bytes(a)
    jax.clear_caches()  # the programs of the first run are gone from memory: the next one loads them from the folder
    second = _run(tmp_path / "second")
    (line,) = _warnings(second.output)
    assert line.startswith(f"warning: the compilation cache {cache} failed (") and line.endswith(
        "); ran again without it (clear it: ocokit cache --clear)"
    )
    assert _numbers(tmp_path / "second") == _numbers(tmp_path / "first")
    assert jax.config.jax_compilation_cache_dir is None  # off for the rest of the command


def test_an_error_of_the_command_itself_is_not_blamed_on_the_cache(cache, tmp_path, monkeypatch):
    calls = []

    def refuse(self, **kwargs):
        calls.append(jax.config.jax_compilation_cache_dir)
        raise ValueError("a refusal of the command's own")

    monkeypatch.setattr(experiments.Experiment, "run", refuse)
    result = CliRunner().invoke(cli.app, [*RUN, "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and result.output.splitlines()[-1] == "error: a refusal of the command's own"
    assert not _warnings(result.output) and calls == [str(cache), None]  # tried again without it, then raised


def test_a_cache_failure_is_one_warning_line_even_when_the_retry_fails_otherwise(cache, tmp_path, monkeypatch):
    errors = iter([AssertionError("(3, 6)"), ValueError("another failure")])

    def fail(self, **kwargs):
        raise next(errors)

    monkeypatch.setattr(experiments.Experiment, "run", fail)
    result = CliRunner().invoke(cli.app, [*RUN, "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and result.output.splitlines()[-1] == "error: another failure"
    assert _warnings(result.output) == [
        f"warning: the compilation cache {cache} failed (AssertionError: (3, 6)); ran again without it "
        "(clear it: ocokit cache --clear)"
    ]


# ----------------------------------------------------------------------------------------------------- Ctrl-C


def test_the_first_ctrl_c_stops_at_the_next_safe_point_and_the_second_at_once():
    """The first press raises nothing where it lands (XLA may be compiling in its threads; the process must not exit
    under them): the command stops at its next safe point. The second press is Python's own KeyboardInterrupt."""
    previous = signal.getsignal(signal.SIGINT)
    try:
        cli._CTRL_C(signal.SIGINT, None)
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        with pytest.raises(KeyboardInterrupt):
            cli._CTRL_C.check()
        cli._CTRL_C.check()  # one press, one stop
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.integration
@pytest.mark.parametrize("delay", [None, 0.5, 4.0], ids=["importing", "compiling", "computing"])
def test_ctrl_c_during_a_run_is_one_line_and_exit_130(tmp_path, delay):
    """SIGINT while JAX loads, then after the command started (compiling, computing): exit 130, one line, no
    traceback, no crash."""
    args = ["run", "time-varying-regression", "--T", "20000", "--seeds", "40", "--option", "extras=false",
            "--option", "algorithms=COLDQ", "--out", str(tmp_path / "out"), "--plain"]  # fmt: skip
    env = {**os.environ, "OCOKIT_CACHE_DIR": "", "COLUMNS": "200", "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "ocokit.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)  # fmt: skip
    try:
        if delay is None:
            time.sleep(0.3)  # the command group is being imported, or JAX
        else:
            header = proc.stdout.readline()  # printed once the command runs (imports done, input checked)
            assert header.startswith("time-varying-regression ("), header
            time.sleep(delay)
        assert proc.poll() is None, "the run ended before it could be interrupted"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130, (proc.returncode, out[-2000:], err[-2000:])
    assert [line for line in out.splitlines() if line.strip()][-1] == "error: interrupted"
    assert sum("interrupted" in line for line in (out + err).splitlines()) == 1
    assert delay is None or "warning: Ctrl-C: stopping once the runs in progress are stored" in err
    assert "Traceback" not in out + err and "Fatal Python error" not in err and "KeyboardInterrupt" not in out + err
