"""Session checkpoints (``save``, ``restore``, ``checkpoint=``/``every=``) and exactly-once rounds (``round=``,
``first_round=``): a session stopped and restored anywhere plays as one that never stopped, bit for bit."""

from __future__ import annotations

import functools
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ocokit
from ocokit.algorithms import COLDQ, OGD, ProblemInfo
from ocokit.engine import _checkpoint
from ocokit.problems import JobScheduling, TimeVaryingRegression
from ocokit.results import temporary_name
from tests.helpers import count_compiles

T = 12


@functools.cache
def case(name: str):
    """``(learner, problem)``: OGD on a small regression, COLDQ on a small job-scheduling problem."""
    if name == "ogd-regression":
        return OGD(eta=0.05), TimeVaryingRegression(dim=3)
    jobs = JobScheduling.synthetic(num_slots=T, regions=2, centres_per_region=2)
    return COLDQ.from_paper(ProblemInfo.of(jobs, T), table=6), jobs


CASES = ("ogd-regression", "coldq-jobs")


@functools.cache
def rounds(name: str, key: int = 0) -> tuple:
    """The T rounds' data of ``case(name)`` with ``key``, drawn as ``ocokit.run`` draws them."""
    _, problem = case(name)
    env_key = ocokit.engine.split_key(jax.random.PRNGKey(key))[0]
    return tuple(problem.round_data(None, jax.random.fold_in(env_key, t), t) for t in range(1, T + 1))


def play(session: ocokit.Session, datas, upto: int, xs: list, reports: list) -> None:
    """Play rounds ``session.t + 1 .. upto``, each with its index, appending the decisions and the reports."""
    for t in range(session.t + 1, upto + 1):
        xs.append(np.array(session.decide()))
        out = session.observe(datas[t - 1], round=t)
        reports.append(np.concatenate([np.atleast_1d(out["loss"]), out["constraints"]]))


@functools.cache
def uninterrupted(name: str) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Decisions, reports ``[f_t, g_t]`` and final state leaves of one session that never stops."""
    learner, problem = case(name)
    session = ocokit.Session(learner, problem, horizon=T, key=0)
    xs, reports = [], []
    play(session, rounds(name), T, xs, reports)
    return np.stack(xs), np.stack(reports), [np.array(a) for a in jax.tree.leaves(session.state)]


def assert_same_bits(got, want) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes(), np.max(np.abs(got - want))


@pytest.mark.parametrize("name", CASES)
@settings(max_examples=12, deadline=None)
@given(
    stops=st.lists(st.integers(0, T), max_size=4),
    ways=st.lists(st.sampled_from(["restore", "checkpoint"]), min_size=4, max_size=4),
    every=st.integers(1, 4),
)
def test_saved_and_restored_anywhere_plays_as_one_uninterrupted_session(name, stops, ways, every):
    """Any save points (repeated ones too), any number of restarts, by ``restore`` or by ``checkpoint=``."""
    learner, problem = case(name)
    datas, xs, reports = rounds(name), [], []
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "session.ckpt"
        session = ocokit.Session(learner, problem, horizon=T, key=0)
        for stop, way in zip(sorted(stops), ways, strict=False):
            play(session, datas, stop, xs, reports)
            session.save(path)
            del session  # the process dies: only the file is left
            if way == "restore":
                session = ocokit.Session.restore(path, learner, problem)
            else:
                session = ocokit.Session(learner, problem, horizon=T, key=0, checkpoint=path, every=every)
            assert session.t == stop
        play(session, datas, T, xs, reports)
        assert [p.name for p in Path(folder).iterdir()] == (["session.ckpt"] if stops else [])
    want_xs, want_reports, want_state = uninterrupted(name)
    assert_same_bits(np.stack(xs), want_xs)
    assert_same_bits(np.stack(reports), want_reports)
    for got, want in zip(jax.tree.leaves(session.state), want_state, strict=True):
        assert_same_bits(got, want)


@pytest.mark.parametrize("name", CASES)
def test_uninterrupted_session_plays_as_run(name):
    """The sessions above against ``ocokit.run`` over the same rounds. Job scheduling with COLDQ (the tutorial's
    controller): bit for bit. The regression: to the last bit or two, as a round compiled alone may round apart
    from the same round inside ``run``'s scan (XLA fuses the two programs differently)."""
    learner, problem = case(name)
    traj = ocokit.run(learner, problem, T, 0, record_decisions=True, comparators=False)
    xs, reports, _ = uninterrupted(name)
    want = np.concatenate([np.asarray(traj.loss)[:, None], np.asarray(traj.constraints)], axis=1)
    if name == "coldq-jobs":
        assert_same_bits(xs, traj.decisions)
        assert_same_bits(reports, want)
    else:
        np.testing.assert_allclose(xs, traj.decisions, rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(reports, want, rtol=1e-13, atol=1e-15)


def test_duplicate_rounds_are_refused_or_ignored(tmp_path):
    learner, problem = case("ogd-regression")
    datas = rounds("ogd-regression")
    session = ocokit.Session(learner, problem, horizon=T, key=0)
    for t in (1, 2, 3):
        session.observe(datas[t - 1], round=t)
    x = np.array(session.decide())
    with pytest.raises(ValueError, match=r"^round 2 was already observed: the next round is 4 \(duplicates='ignore'"):
        session.observe(datas[1], round=2)
    stacked = jax.tree.map(lambda *a: jnp.stack(a), *datas[1:5])  # rounds 2..5
    with pytest.raises(ValueError, match=r"^rounds 2-3 were already observed: the next round is 4"):
        session.observe_many(stacked, first_round=2)
    assert session.t == 3 and np.array_equal(session.decide(), x)  # nothing absorbed

    session.save(tmp_path / "c.ckpt")
    replay = ocokit.Session.restore(tmp_path / "c.ckpt", learner, problem, duplicates="ignore")
    assert replay.observe(datas[2], round=3) is None and replay.t == 3
    assert replay.observe_many(jax.tree.map(lambda a: a[:2], stacked), first_round=2) is None
    out = replay.observe_many(stacked, first_round=2)  # rounds 2-3 skipped, 4-5 played
    assert replay.t == 5 and out["loss"].shape == (2,) and out["constraints"].shape == (2, 2)
    straight = ocokit.Session(learner, problem, horizon=T, key=0)
    straight.observe_many(jax.tree.map(lambda *a: jnp.stack(a), *datas[:3]))
    np.testing.assert_allclose(out["loss"], straight.observe_many(jax.tree.map(lambda a: a[2:], stacked))["loss"])
    with pytest.raises(ValueError, match="duplicates must be one of"):
        ocokit.Session(learner, problem, horizon=T, duplicates="skip")


def test_a_gap_names_the_missing_rounds():
    learner, problem = case("ogd-regression")
    datas = rounds("ogd-regression")
    session = ocokit.Session(learner, problem, horizon=T, key=0)
    with pytest.raises(ValueError, match=r"^round 1 was never observed: the next round is 1, got round 2$"):
        session.observe(datas[1], round=2)
    session.observe(datas[0], round=1)
    with pytest.raises(ValueError, match=r"^rounds 2-4 were never observed: the next round is 2, got round 5$"):
        session.observe(datas[4], round=5)
    with pytest.raises(ValueError, match=r"^rounds 2-3 were never observed: the next round is 2, got round 4$"):
        session.observe_many(jax.tree.map(lambda *a: jnp.stack(a), *datas[3:6]), first_round=4)
    for bad in (0, -1, 2.0, True, "2"):
        with pytest.raises(ValueError, match="round must be an integer >= 1"):
            session.observe(datas[1], round=bad)
    assert session.t == 1
    session.observe(datas[1])  # no index: the next round
    session.observe(datas[2], round=np.int64(3))
    assert session.t == 3


def test_after_a_restore_the_next_round_is_the_saved_one_plus_one(tmp_path):
    learner, problem = case("ogd-regression")
    datas = rounds("ogd-regression")
    session = ocokit.Session(learner, problem, horizon=T, key=0)
    session.observe_many(jax.tree.map(lambda *a: jnp.stack(a), *datas[:5]), first_round=1)
    session.save(tmp_path / "c.ckpt")
    session.observe(datas[5], round=6)  # played after the save: lost with the process
    restored = ocokit.Session.restore(tmp_path / "c.ckpt", learner, problem)
    assert restored.t == 5
    with pytest.raises(ValueError, match=r"^round 6 was never observed: the next round is 6, got round 7$"):
        restored.observe(datas[6], round=7)
    with pytest.raises(ValueError, match="round 5 was already observed: the next round is 6"):
        restored.observe(datas[4], round=5)
    restored.observe(datas[5], round=6)
    assert restored.t == 6


def test_checkpoint_every_k_rounds_saves_on_its_own_and_resumes(tmp_path):
    learner, problem = case("ogd-regression")
    datas = rounds("ogd-regression")
    path = tmp_path / "auto.ckpt"
    session = ocokit.Session(learner, problem, horizon=T, key=0, checkpoint=path, every=3)
    assert not path.exists()
    for t in range(1, 8):
        session.observe(datas[t - 1], round=t)
        assert _checkpoint.read(path).round == 3 * (t // 3) if t >= 3 else not path.exists()
    resumed = ocokit.Session(learner, problem, horizon=T, key=0, checkpoint=path, every=3)
    assert resumed.t == 6
    burst = jax.tree.map(lambda *a: jnp.stack(a), *datas[6:11])  # rounds 7-11: saved once, at its end
    resumed.observe_many(burst, first_round=7)
    assert _checkpoint.read(path).round == 11
    with pytest.raises(ValueError, match="every must be an integer >= 1"):
        ocokit.Session(learner, problem, horizon=T, checkpoint=path, every=0)
    with pytest.raises(ValueError, match="every=3 needs checkpoint=<file>"):
        ocokit.Session(learner, problem, horizon=T, every=3)


def test_restoring_into_another_configuration_is_one_line_naming_what_differs(tmp_path, monkeypatch):
    learner, problem = case("ogd-regression")
    path = tmp_path / "c.ckpt"
    session = ocokit.Session(learner, problem, horizon=T, key=0)
    session.observe(rounds("ogd-regression")[0], round=1)
    session.save(path)
    other_problem = TimeVaryingRegression(dim=4)
    coldq = COLDQ.from_paper(ProblemInfo.of(problem, T), table=3)
    refused = {
        "learner (OGD with another eta)": dict(learner=OGD(eta=0.1)),
        "learner (OGD, not COLDQ)": dict(learner=coldq),
        "problem (TimeVaryingRegression with another domain)": dict(problem=other_problem),
        "horizon (12, not 13)": dict(horizon=13),
        "key ([0, 0], not [0, 1])": dict(key=1),
        "learner (OGD with another eta), horizon (12, not 20)": dict(learner=OGD(eta=0.1), horizon=20),
    }
    for what, changed in refused.items():
        given = {"learner": learner, "problem": problem, "horizon": T, "key": 0, **changed}
        lp, rest = (given.pop("learner"), given.pop("problem")), given
        message = f"checkpoint {path} was saved with another {what}"
        with pytest.raises(ValueError) as err:
            ocokit.Session.restore(path, *lp, **rest)
        assert str(err.value) == message
        with pytest.raises(ValueError) as err:  # resuming refuses it too, rather than starting anew
            ocokit.Session(*lp, **rest, checkpoint=path)
        assert str(err.value) == message
    monkeypatch.setattr(ocokit, "__version__", "99.0")
    with pytest.raises(ValueError, match=r"saved with another ocokit version \(0\.\d.*, not 99\.0\)$"):
        ocokit.Session.restore(path, learner, problem)


def test_a_file_that_is_not_a_whole_checkpoint_is_one_line(tmp_path):
    learner, problem = case("ogd-regression")
    path = tmp_path / "c.ckpt"
    ocokit.Session(learner, problem, horizon=T, key=0).save(path)
    good = path.read_bytes()
    header = json.loads(good.split(b"\n", 1)[0])
    assert header["format"] == "ocokit-session-checkpoint-1" and header["round"] == 0
    assert set(header["versions"]) == {"ocokit", "jax", "equinox"}
    broken = {
        "is not an ocokit Session checkpoint": b"PAR1 not a checkpoint",
        "is truncated: ": good[:-7],
        "is corrupt: its state does not match": good[:-1] + bytes([good[-1] ^ 1]),
    }
    for what, data in broken.items():
        path.write_bytes(data)
        for make in (
            lambda: ocokit.Session.restore(path, learner, problem),
            lambda: ocokit.Session(learner, problem, horizon=T, checkpoint=path),
        ):
            with pytest.raises(ValueError, match=what) as err:
                make()
            assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="cannot read checkpoint"):
        ocokit.Session.restore(tmp_path / "missing.ckpt", learner, problem)


def test_a_save_that_fails_before_the_rename_keeps_the_previous_checkpoint_whole(tmp_path, monkeypatch):
    """A process killed between writing the temporary and renaming it (simulated: ``os.replace`` raises) leaves the
    previous checkpoint as it was and no temporary (removed on failure, or by the next restore if killed)."""
    learner, problem = case("ogd-regression")
    datas = rounds("ogd-regression")
    path = tmp_path / "c.ckpt"
    session = ocokit.Session(learner, problem, horizon=T, key=0, checkpoint=path, every=1)
    session.observe(datas[0], round=1)
    before = path.read_bytes()

    def killed(src, dst):
        raise OSError("killed before the rename")

    with monkeypatch.context() as patch:
        patch.setattr(os, "replace", killed)
        with pytest.raises(OSError, match="killed before the rename"):
            session.observe(datas[1], round=2)
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["c.ckpt"]
    assert ocokit.Session.restore(path, learner, problem).t == 1
    # a temporary left by a writer that was killed (a dead process of this host) is removed by the next restore
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    name = temporary_name("c.ckpt").replace(f"-{os.getpid()}-", f"-{int(dead.stdout)}-")
    (tmp_path / name).write_bytes(before[:10])
    assert ocokit.Session(learner, problem, horizon=T, key=0, checkpoint=path).t == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.ckpt"]


def test_typed_keys_and_weak_types_are_restored_as_they_were(tmp_path):
    """A typed key, and leaves of the state that are weakly typed, come back as such: the restored session's rounds
    compile nothing new and its state has the tree, shapes, dtypes and weak types of the uninterrupted one's."""
    learner, problem = case("coldq-jobs")
    key = jax.random.key(3)
    datas = rounds("coldq-jobs", 3)
    session = ocokit.Session(learner, problem, horizon=T, key=key, checkpoint=tmp_path / "c.ckpt")
    session.observe(datas[0], round=1)
    kinds = lambda tree: jax.tree.map(lambda a: (a.shape, a.dtype, a.weak_type), tree)  # noqa: E731
    assert any(a.weak_type for a in jax.tree.leaves(session._carry)), "no weakly typed leaf to restore"
    restored = ocokit.Session.restore(tmp_path / "c.ckpt", learner, problem)
    assert jax.dtypes.issubdtype(restored.key.dtype, jax.dtypes.prng_key)
    assert kinds(restored._carry) == kinds(session._carry)
    with count_compiles("_play") as counted:
        restored.observe(datas[1], round=2)
        session.observe(datas[1], round=2)
    assert counted.count == 0
    for got, want in zip(jax.tree.leaves(restored._carry), jax.tree.leaves(session._carry), strict=True):
        assert_same_bits(got, want)


_CHILD = """
import os, sys, time
from pathlib import Path

import jax
import ocokit

folder, T, hang_at = Path(sys.argv[1]), int(sys.argv[2]), int(os.environ.get("HANG_AT_SAVE", "0"))
checkpoint, log = folder / "session.ckpt", folder / "decisions.log"
if hang_at:  # stop for good inside the hang_at-th save, after its temporary is written and before the rename
    replace, saves = os.replace, []
    def hanging_replace(src, dst):
        if Path(dst) == checkpoint:
            saves.append(dst)
            if len(saves) == hang_at:
                print("hanging", flush=True)
                time.sleep(3600)
        replace(src, dst)
    os.replace = hanging_replace

problem = ocokit.problems.TimeVaryingRegression(dim=3)
session = ocokit.Session(ocokit.algorithms.OGD(eta=0.05), problem, horizon=T, key=7, checkpoint=checkpoint, every=1)
# round t's line is written before round t is saved: cut the log back to the saved rounds (a kill may have left
# the line of the round after them, or half of it)
lines = log.read_text().splitlines(keepends=True) if log.exists() else []
kept = [line for line in lines if line.endswith("\\n")][: session.t]
assert len(kept) == session.t, f"lost: {len(kept)} lines for {session.t} saved rounds"
ocokit.results.atomic_write_bytes(log, "".join(kept).encode())
env_key = ocokit.engine.split_key(session.key)[0]
with open(log, "a") as out:
    for t in range(session.t + 1, T + 1):
        x = session.decide()
        out.write(f"{t} " + " ".join(float(v).hex() for v in x) + "\\n")
        out.flush()
        os.fsync(out.fileno())
        session.observe(problem.round_data(None, jax.random.fold_in(env_key, t), t), round=t)
state = [a.tobytes().hex() for a in map(jax.numpy.asarray, jax.tree.leaves(session.state))]
print("done", session.t, ocokit.fingerprints.fingerprint(state))
"""


@pytest.mark.integration
def test_a_controller_killed_at_any_moment_resumes_with_nothing_lost_or_duplicated(tmp_path):
    """SIGKILL inside a save (between the temporary and the rename) and at random moments of the stream; each
    restart resumes from the last whole checkpoint, and the last one ends with the uninterrupted run's decisions,
    each round once, the same final state, and no temporary left."""
    rounds_, script = 80, tmp_path / "child.py"
    script.write_text(textwrap.dedent(_CHILD))
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_")}

    def start(folder: Path, **extra: str) -> subprocess.Popen:
        folder.mkdir(exist_ok=True)
        cmd = [sys.executable, str(script), str(folder), str(rounds_)]
        return subprocess.Popen(cmd, env={**env, **extra}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def finish(proc: subprocess.Popen) -> str:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err[-3000:]
        return out

    straight = finish(start(tmp_path / "straight"))
    folder = tmp_path / "killed"

    def lines() -> int:
        log = folder / "decisions.log"
        return log.read_text().count("\n") if log.exists() else 0

    def kill(proc: subprocess.Popen, when) -> None:
        deadline = time.monotonic() + 120
        while not when() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.001)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)  # waits, and closes its pipes

    # 1. killed inside the 10th save: the temporary written, the rename not done
    proc = start(folder, HANG_AT_SAVE="10")
    assert proc.stdout.readline() == "hanging\n"
    kill(proc, lambda: True)
    temporaries = [p for p in folder.iterdir() if p.name.startswith(".session.ckpt.ocokit-")]
    assert proc.returncode == -signal.SIGKILL and temporaries, "not killed inside a save"
    assert json.loads((folder / "session.ckpt").read_bytes().split(b"\n", 1)[0])["round"] == 9
    # 2. killed at random moments of the stream (often inside a save: every round is saved)
    rng = random.Random(44)
    for _ in range(3):
        at = lines() + rng.randint(1, 15)
        proc = start(folder)
        kill(proc, lambda at=at: lines() >= at)
        assert proc.returncode == -signal.SIGKILL, "finished before it was killed"
    # 3. restarted to the end
    done = finish(start(folder))
    assert done == straight
    assert (folder / "decisions.log").read_bytes() == (tmp_path / "straight" / "decisions.log").read_bytes()
    assert [int(line.split()[0]) for line in (folder / "decisions.log").read_text().splitlines()] == list(
        range(1, rounds_ + 1)
    )
    assert sorted(p.name for p in folder.iterdir()) == ["decisions.log", "session.ckpt"]
