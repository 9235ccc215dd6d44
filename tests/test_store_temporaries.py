"""Temporary files: ocokit removes only its own dead writers' temporaries, only in the run folders of its store.

A user's old ``.notes.tmp`` and ``.x.tmp`` planted in every place ocokit writes (the out folder, ``runs/`` and its
hive folders, beside an ``export --csv`` destination, a folder linked into the store or the out folder) survive
``ocokit run``, ``ocokit export`` and ``ocokit plot``; an ocokit temporary of a dead process in a run folder is
removed, and one in a folder reached through a symbolic link is not.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ocokit import cli, results

runner = CliRunner()

RUN = ["run", "time-varying-regression", "--T", "20", "--option", "algorithms=COLDQ"]
USERS = (".notes.tmp", ".x.tmp", ".part-a.parquet.myhost-12.0badc0de.tmp")  # the last: a name like an ocokit one


def _dead_pid() -> int:
    """The id of a process of this host that has ended."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, check=True)
    return int(done.stdout)


def _plant(folder: Path, names: tuple[str, ...] = USERS, age: float = 3600.0) -> list[Path]:
    """Files ``names`` in ``folder``, last modified ``age`` seconds ago (an hour: older than any stale limit)."""
    folder.mkdir(parents=True, exist_ok=True)
    planted = []
    for name in names:
        path = folder / name
        path.write_text("a user's file\n")
        os.utime(path, (time.time() - age, time.time() - age))
        planted.append(path)
    return planted


def _invoke(*args: str) -> str:
    result = runner.invoke(cli.app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_temporary_names_are_ocokits_own():
    name = results.temporary_name("part-k.parquet")
    match = results._TMP.fullmatch(name)
    assert match and name.startswith(".part-k.parquet.ocokit-") and int(match["pid"]) == os.getpid()
    assert match["host"] == results._host() and name != results.temporary_name("part-k.parquet")  # a random part
    near = (".part-a.parquet.ocokit-h-1.0badc0de.tmp", ".a.ocokit-h-1-0BADC0DE.tmp", "a.ocokit-h-1-0badc0de.tmp")
    for user in (*USERS, *near):
        assert results._TMP.fullmatch(user) is None, user


@pytest.mark.integration  # every command on one store
def test_a_users_tmp_files_survive_run_export_and_plot_and_only_dead_ocokit_temporaries_go(tmp_path):
    out, elsewhere, exports = tmp_path / "out", tmp_path / "elsewhere", tmp_path / "exports"
    users = _plant(out)  # an existing folder given as --out, with the user's files in it
    _invoke(*RUN, "--seeds", "2", "--out", str(out))
    runs = out / "runs"
    seeds = sorted(p.parent for p in results.run_files(out))
    assert [p.name for p in seeds] == ["seed=0", "seed=1"]
    algorithm, experiment = seeds[0].parent, seeds[0].parent.parent
    for folder in (runs, experiment, algorithm, *seeds):
        users += _plant(folder)
    users += _plant(exports)  # beside the csv the user asks for
    # folders linked into the store and into the out folder: never swept, even of ocokit's own names
    host, dead = results._host(), _dead_pid()
    theirs = (f".part-z.parquet.ocokit-{host}-{dead}-0badc0de.tmp",)
    users += _plant(elsewhere) + _plant(elsewhere, theirs)
    (algorithm / "seed=7").symlink_to(elsewhere, target_is_directory=True)
    (out / "linked").symlink_to(elsewhere, target_is_directory=True)
    # ocokit's own temporaries: a dead writer's of this host, another host's an hour old, a live writer's
    ours = {folder: folder / f".part-d.parquet.ocokit-{host}-{dead}-0badc0de.tmp" for folder in seeds}
    old_remote = _plant(seeds[0], (".part-e.parquet.ocokit-other-host-1-0badc0de.tmp",))[0]
    live = _plant(seeds[0], (f".part-f.parquet.ocokit-{host}-{os.getpid()}-0badc0de.tmp",), age=0)[0]
    for path in ours.values():
        path.write_bytes(b"partial")
    stored = results.run_files(out)  # loading the store sweeps it
    assert not any(p.exists() for p in [*ours.values(), old_remote]) and live.exists()
    assert all(p.exists() for p in users)

    again = seeds[1] / f".part-d.parquet.ocokit-{host}-{dead}-0badc0de.tmp"
    again.write_bytes(b"partial")
    next(p for p in stored if p.parent == seeds[1]).unlink()  # recomputed: its folder is written, and swept
    output = _invoke(*RUN, "--seeds", "3", "--out", str(out))  # seed 2: a new folder
    assert "2 new runs, 1 found on disk" in " ".join(output.split())
    assert not again.exists() and len(results.run_files(out)) == 3
    _invoke("export", str(out), "--csv", str(exports / "runs.csv"))
    _invoke("export", str(out))
    _invoke("plot", str(out))
    assert (exports / "runs.csv").is_file() and (out / "runs.csv").is_file()
    survivors = [p for p in users if p.exists()]
    assert survivors == users, sorted(set(map(str, users)) - set(map(str, survivors)))
    assert live.exists()
    left = [p for p in tmp_path.rglob("*.tmp") if results._TMP.fullmatch(p.name)]
    assert sorted(left) == sorted([live, elsewhere / theirs[0]])  # no temporary of these commands left behind


def test_a_linked_runs_folder_is_not_swept(tmp_path):
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    folder = results.run_path(elsewhere, "exp", "OGD", {"seed": 0}).parent  # elsewhere/runs/experiment=.../seed=0
    dead = folder / f".part-a.parquet.ocokit-{results._host()}-{_dead_pid()}-0badc0de.tmp"
    _plant(folder, (dead.name,))
    out.mkdir()
    (out / "runs").symlink_to(elsewhere / "runs", target_is_directory=True)
    assert results.remove_stale_temporaries(out) == [] and dead.exists()
    assert results.remove_stale_temporaries(elsewhere) == [dead] and not dead.exists()


def test_save_records_sweeps_only_a_run_folder_it_writes_in(tmp_path):
    dead = f".part-a.parquet.ocokit-{results._host()}-{_dead_pid()}-0badc0de.tmp"
    plain = _plant(tmp_path / "plain", (dead, ".x.tmp"))  # not a run folder: nothing removed
    results.save_records(tmp_path / "plain" / "part-b.parquet", {"loss": [1.0]}, {})
    folder = results.run_path(tmp_path, "exp", "OGD", {"seed": 0}).parent
    swept = _plant(folder, (dead, ".x.tmp"))
    results.save_records(folder / "part-b.parquet", {"loss": [1.0]}, {})
    assert all(p.exists() for p in plain) and not swept[0].exists() and swept[1].exists()
