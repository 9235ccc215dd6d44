"""Engine programs kept on disk (``ocokit._executables``): found without tracing, equal bit for bit to the
programs compiled in-process, never stored for untrusted code, never stale, corrupt or unbounded."""

import json
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ocokit
from ocokit import _executables, engine

T, SEEDS = 30, 2


@pytest.fixture
def folder(tmp_path):
    """Programs kept in a fresh folder for one test (the suite keeps none: restored afterwards)."""
    saved = _executables.folder()
    _executables.use(tmp_path / "programs")
    _executables.counts.clear()
    yield tmp_path / "programs"
    _executables.use(saved)


def _sweep(learner, problem):
    """A small sweep: two programs, its rounds drawn up front (shared by every learner on this game) and its play."""
    traj = ocokit.sweep(learner, problem, T, SEEDS, comparators=False)
    return np.asarray(traj.loss), np.asarray(traj.constraints)


@pytest.fixture
def one_program(monkeypatch):
    """A sweep of one program: its rounds drawn inside its scan (no up-front draw)."""
    monkeypatch.setattr(engine, "UPFRONT_BYTES", 0)


def _reference(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` with no folder in use: the plain ``eqx.filter_jit`` path."""
    saved = _executables.folder()
    _executables.use(None)
    try:
        return fn(*args, **kwargs)
    finally:
        _executables.use(saved)


LEARNERS = {
    "OGD": lambda info: ocokit.algorithms.OGD(eta=0.01),
    "COLDQ": lambda info: ocokit.algorithms.COLDQ.from_theory(info),
}


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_stored_and_loaded_programs_equal_the_in_process_ones_bit_for_bit(folder, name):
    problem = ocokit.problems.TimeVaryingRegression()
    learner = LEARNERS[name](ocokit.algorithms.ProblemInfo.of(problem, T))
    expected = _reference(_sweep, learner, problem)
    stored = _sweep(learner, problem)
    assert _executables.counts["stored"] == 2 and len(list(folder.glob("*.xla"))) == 2  # the draw, the play
    _executables.use(folder)  # forget this process's programs: the next call reads the files
    loaded = _sweep(learner, problem)
    assert _executables.counts["loaded"] == 2 and _executables.counts["compiled"] == 2
    for got in (stored, loaded):
        for a, b in zip(got, expected, strict=True):
            np.testing.assert_array_equal(a, b)


def test_a_static_value_or_a_shape_is_part_of_the_key(folder):
    problem = ocokit.problems.TimeVaryingRegression()
    for decay in ("constant", "inverse_sqrt"):  # a static field: baked into the program
        learner = ocokit.algorithms.OGD(eta=0.01, decay=decay)
        np.testing.assert_array_equal(_sweep(learner, problem)[0], _reference(_sweep, learner, problem)[0])
    longer = ocokit.sweep(ocokit.algorithms.OGD(eta=0.01), problem, T + 1, SEEDS, comparators=False)
    assert longer.loss.shape == (SEEDS, T + 1)
    # stored: the draw and two plays of T rounds, the draw and the play of T + 1 rounds; the second play's draw
    # is the first's, read back from its file (switching folders, as _reference does, forgets loaded programs)
    assert _executables.counts["stored"] == 5 and _executables.counts["loaded"] == 1


def test_a_program_holding_user_code_runs_but_is_never_stored(folder):
    def my_loss(c, x):  # defined here: not ocokit's code, so no key could see it change
        return jnp.sum((x - c) ** 2)

    problem = ocokit.problems.CustomProblem(
        domain=ocokit.sets.Box(-1.0, 1.0, dim=2), loss=my_loss, constraints=None, data=jnp.ones((T, 2))
    )
    traj = ocokit.run(ocokit.algorithms.OGD(eta=0.1), problem, T=T)
    assert np.isfinite(np.asarray(traj.loss)).all()
    assert _executables.counts["untrusted"] == 1 and _executables.counts["stored"] == 0
    assert not folder.exists() or not list(folder.iterdir())


def test_the_trusted_pickler_refuses_code_outside_the_trusted_modules():
    assert _executables._trusted_pickle((ocokit.algorithms.OGD(eta=0.1), jnp.sum, np.float64, 3.0))

    class Hidden:  # a class of this module that pickles as a trusted call
        def __reduce__(self):
            return (int, (3,))

    here = test_the_trusted_pickler_refuses_code_outside_the_trusted_modules
    for untrusted in (lambda x: x, here, pytest.fail, Hidden()):
        with pytest.raises(_executables._Untrusted):
            _executables._trusted_pickle({"f": untrusted})
    key = _executables.program_key(engine._run, (), ({"f": lambda x: x},), jax.tree.structure(()), [])
    assert key is None


def test_nothing_is_keyed_without_ocokit_source_files(monkeypatch):
    assert _executables.program_key(engine._run, (), (3,), jax.tree.structure(()), []) is not None
    monkeypatch.setattr(_executables, "_environment", lambda: None)  # an install without its .py files
    assert _executables.program_key(engine._run, (), (3,), jax.tree.structure(()), []) is None


def test_a_corrupt_or_foreign_file_is_compiled_again_and_replaced(folder, one_program):
    problem, learner = ocokit.problems.TimeVaryingRegression(), ocokit.algorithms.OGD(eta=0.01)
    expected = _sweep(learner, problem)
    (path,) = folder.glob("*.xla")
    good = path.read_bytes()
    for damaged in (good[: len(good) // 2], b"not a program", good[:-1] + bytes([good[-1] ^ 1])):
        path.write_bytes(damaged)
        _executables.use(folder)
        np.testing.assert_array_equal(_sweep(learner, problem)[0], expected[0])
        assert path.read_bytes() != damaged and path.read_bytes()[: len(_executables.FORMAT)] == _executables.FORMAT
    assert _executables.counts["loaded"] == 0 and _executables.counts["stored"] == 4


def test_the_folder_is_bounded_least_recently_used_out(folder, monkeypatch, one_program):
    problem = ocokit.problems.TimeVaryingRegression()
    _sweep(ocokit.algorithms.OGD(eta=0.01), problem)
    (first,) = folder.glob("*.xla")
    monkeypatch.setattr(_executables, "MAX_BYTES", first.stat().st_size + 1)
    _sweep(ocokit.algorithms.OGD(eta=0.01, decay="inverse_sqrt"), problem)
    (kept,) = folder.glob("*.xla")
    assert kept != first


def test_a_program_must_return_arrays_only(folder):
    program = _executables.Program(lambda x: (x + 1, "text"))
    with pytest.raises(TypeError, match="must return arrays only"):
        program(jnp.ones(2))


def test_an_unwritable_folder_costs_a_compile_and_nothing_else(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    saved = _executables.folder()
    _executables.use(blocker / "programs")  # cannot be created: a file is in the way
    try:
        learner, problem = ocokit.algorithms.OGD(eta=0.01), ocokit.problems.TimeVaryingRegression()
        np.testing.assert_array_equal(_sweep(learner, problem)[0], _reference(_sweep, learner, problem)[0])
    finally:
        _executables.use(saved)


_PROCESS = """
import json, sys
import jax, numpy as np
jax.config.update("jax_enable_x64", True)
import ocokit
from ocokit import _executables
if sys.argv[3:] == ["jax-stores-them-too"]:  # as ocokit did before its programs stayed out of JAX's cache
    import contextlib, types
    _executables._jax_config = types.SimpleNamespace(persistent_cache_min_compile_time_secs=contextlib.nullcontext)
_executables.use(sys.argv[1])
import functools
from ocokit import engine
computed = {"footprints": 0, "probes": 0}  # what the engine learns by tracing, and by a probe compile


def counted(name, fn):
    @functools.wraps(fn)  # the same name: the same key
    def wrapper(*args):
        computed[name] += 1
        return fn(*args)

    return wrapper


engine._trace_footprint = counted("footprints", engine._trace_footprint)
engine._probe_options = counted("probes", engine._probe_options)
problem = ocokit.problems.TimeVaryingRegression()
traj = ocokit.sweep(ocokit.algorithms.OGD(eta=0.01), problem, 30, 2, comparators=False)
env = ocokit.comparators(problem, 30, 2)  # interior-point steps: jaxlib's LAPACK kernels
np.savez(sys.argv[2], loss=traj.loss, constraints=traj.constraints, optimum=env["optimum_loss"])
print(json.dumps(dict(_executables.counts) | {k: n for k, n in computed.items() if n}))
"""


def _process(folder, out, jax_cache=None, *args: str) -> dict[str, int]:
    env = {k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"}
    if jax_cache is not None:  # JAX's own cache too, as the CLI has it, every program stored
        env |= {"JAX_COMPILATION_CACHE_DIR": str(jax_cache), "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}
    done = subprocess.run(
        [sys.executable, "-c", _PROCESS, str(folder), str(out), *args], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_second_process_loads_every_program_and_computes_the_same_numbers(tmp_path):
    """Across processes, beside JAX's own cache, which does not get a second copy of the programs stored here;
    also when this folder was emptied and JAX's holds them (written by an older ocokit: a program JAX's cache
    loaded cannot be serialized again, so it is compiled afresh under a one-off name)."""
    folder, jax_cache = tmp_path / "programs", tmp_path / "jax"
    first = _process(folder, tmp_path / "1.npz", jax_cache)
    # the sweep's draw and play, the comparators; the footprints without and with the comparators, the probe of
    # the options small games compile with (one, or two where the CPU knows them: the quick compile is probed too)
    assert {k: first.pop(k) for k in ("compiled", "stored", "footprints")} == {
        "compiled": 3,
        "stored": 3,
        "footprints": 2,
    }
    assert first.pop("probes") in (1, 2) and not first
    assert jax_cache.is_dir() and not list(jax_cache.glob("jit_ocokit_*"))  # stored here only
    second = _process(folder, tmp_path / "2.npz", jax_cache)
    assert second == {"loaded": 3}  # nothing traced, probed or compiled: all read from the folder
    for path in folder.glob("*.xla"):
        path.unlink()
    third = _process(folder, tmp_path / "3.npz", jax_cache, "jax-stores-them-too")
    assert third == {"compiled": 3, "stored": 3} and len(list(jax_cache.glob("jit_ocokit_*-cache"))) == 3
    for path in folder.glob("*.xla"):
        path.unlink()
    fourth = _process(folder, tmp_path / "4.npz", jax_cache)
    assert fourth["stored"] == 3 and fourth["compiled"] == 6  # JAX's cache served all three: each compiled again
    fifth = _process(folder, tmp_path / "5.npz", jax_cache)
    assert fifth == {"loaded": 3}
    problem = ocokit.problems.TimeVaryingRegression()
    traj = _reference(ocokit.sweep, ocokit.algorithms.OGD(eta=0.01), problem, T, SEEDS, comparators=False)
    env = _reference(ocokit.comparators, problem, T, SEEDS)
    expected = {"loss": traj.loss, "constraints": traj.constraints, "optimum": env["optimum_loss"]}
    for run in "12345":
        got = np.load(tmp_path / f"{run}.npz")
        for name, value in expected.items():
            np.testing.assert_array_equal(got[name], np.asarray(value), err_msg=f"process {run}: {name}")


def test_the_cli_keeps_programs_in_a_subfolder_of_its_cache(monkeypatch, tmp_path):
    from ocokit import cli

    saved = (_executables.folder(), jax.config.jax_compilation_cache_dir)
    try:
        monkeypatch.setenv(cli.CACHE_ENV_VAR, str(tmp_path / "cache"))
        jax.config.update("jax_compilation_cache_dir", None)
        cli._compilation_cache()
        assert _executables.folder() == tmp_path / "cache" / "ocokit-executables"
        jax.config.update("jax_compilation_cache_dir", None)
        monkeypatch.setenv(cli.CACHE_ENV_VAR, "")
        assert cli._compilation_cache() is None and _executables.folder() is None
    finally:
        _executables.use(saved[0])
        jax.config.update("jax_compilation_cache_dir", saved[1])


def test_arrays_enter_the_key_by_shape_and_dtype_only(folder):
    """Numbers held in arrays are arguments of the stored program, not part of its name: one program serves both."""
    problem = ocokit.problems.TimeVaryingRegression()
    learners = [ocokit.algorithms.OGD(eta=jnp.asarray(eta)) for eta in (0.01, 0.02)]
    outs = [_sweep(learner, problem)[0] for learner in learners]
    assert _executables.counts["stored"] == 2 and _executables.counts["compiled"] == 2  # the draw, the play
    for learner, out in zip(learners, outs, strict=True):
        np.testing.assert_array_equal(out, _reference(_sweep, learner, problem)[0])


def test_a_remembered_command_prefetches_its_programs(folder):
    problem, learner = ocokit.problems.TimeVaryingRegression(), ocokit.algorithms.OGD(eta=0.01)
    expected = _sweep(learner, problem)
    _executables.remember("my command")
    _executables.use(folder)  # a new invocation, as far as this module knows
    _executables.prefetch("my command")
    _executables.prefetch("another command")  # never remembered: nothing to do
    got = _sweep(learner, problem)
    assert _executables.counts["prefetched"] == 2 and _executables.counts["loaded"] == 2  # the draw, the play
    np.testing.assert_array_equal(got[0], expected[0])
    _executables.use(folder)
    _executables.prefetch("my command")
    _executables.wait_prefetch()  # returns once every load has ended
    assert len(_executables._prefetched) == 2 and all(f.done() for f in _executables._prefetched.values())
    assert _executables.counts["loaded"] == 4  # loaded by the prefetch thread, not yet called
    _executables.use(folder)
    _executables.prefetch("my command")
    _executables.cancel_prefetch()  # an error before any program was called: its loads are dropped
    assert not _executables._prefetched


def test_a_damaged_note_prefetches_nothing_and_notes_are_bounded(folder, monkeypatch):
    _sweep(ocokit.algorithms.OGD(eta=0.01), ocokit.problems.TimeVaryingRegression())
    _executables.remember("a")
    (note,) = (folder / "commands").glob("*.json")
    for damaged in ("{", '{"programs": ["../../etc"]}', '{"programs": 3}', "[]"):
        note.write_text(damaged)
        _executables.use(folder)
        _executables.prefetch("a")
        assert not _executables._prefetched
    monkeypatch.setattr(_executables, "MAX_COMMANDS", 2)
    for command in "bcd":
        _sweep(ocokit.algorithms.OGD(eta=0.01), ocokit.problems.TimeVaryingRegression())
        _executables.remember(command)
    assert len(list((folder / "commands").glob("*.json"))) == 2


def _dims(box, T):
    return [box.shape[0], T]


def test_a_remembered_value_is_read_back_keyed_like_a_program_and_recomputed_when_damaged(folder, monkeypatch):
    calls = []

    def ask(box, T):
        return _executables.remembered(_dims, (box, T), lambda: calls.append(T) or _dims(box, T))

    box = ocokit.sets.Box(0.0, 1.0, dim=3)
    assert ask(box, 5) == [3, 5] and calls == [5]
    assert ask(ocokit.sets.Box(-1.0, 2.0, dim=3), 5) == [3, 5] and calls == [5]  # its arrays enter by shape
    assert ask(box, 6) == [3, 6] and ask(ocokit.sets.Box(0.0, 1.0, dim=4), 5) == [4, 5]
    assert calls == [5, 6, 5]  # a static value, a shape: another key
    (stored,) = [p for p in (folder / "facts").glob("*.json") if json.loads(p.read_text())["value"] == [3, 5]]
    assert stored in _executables.stored_files(folder)  # what `ocokit cache --clear` deletes
    for damaged in ("{", '{"function": "x"}', ""):
        stored.write_text(damaged)
        assert ask(box, 5) == [3, 5] and json.loads(stored.read_text())["value"] == [3, 5]  # computed, replaced
    assert calls == [5, 6, 5, 5, 5, 5]
    for _ in range(2):  # a function of this (untrusted) module among the arguments
        _executables.remembered(_dims, (box, 5, _dims), lambda: calls.append("user code"))
    assert calls[-2:] == ["user code"] * 2  # never keyed: computed each time
    monkeypatch.setattr(_executables, "MAX_FACTS", 2)
    for T in (7, 8, 9):
        ask(box, T)
    assert len(list((folder / "facts").glob("*.json"))) == 2  # bounded, the oldest out
    _executables.use(None)
    assert ask(box, 9) == [3, 9] and calls[-1] == 9  # no folder: computed


def test_the_cli_second_invocation_loads_the_programs_and_prints_the_same_numbers(tmp_path):
    args = ["run", "time-varying-regression", "--T", "30", "--seeds", "2", "--json",
            "--option", "extras=false", "--option", "algorithms=COLDQ,RECOO"]  # fmt: skip
    env = {**os.environ, "OCOKIT_CACHE_DIR": str(tmp_path / "cache")}
    summaries = []
    for run in ("1", "2"):
        done = subprocess.run(
            [sys.executable, "-m", "ocokit.cli", *args, "--out", str(tmp_path / run)],
            env=env, capture_output=True, text=True,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        summaries.append(_numbers(json.loads(done.stdout)))
        programs = tmp_path / "cache" / "ocokit-executables"
        if run == "1":
            stored = {path: (path.stat().st_ino, path.stat().st_mtime_ns) for path in programs.glob("*.xla")}
    assert summaries[0] == summaries[1]
    assert len(stored) == 4  # the comparators, the rounds drawn up front (shared) and two plays
    assert set(programs.glob("*.xla")) == stored.keys()
    for path, (inode, mtime) in stored.items():  # loaded (touched), not written again (a new file each time)
        assert path.stat().st_ino == inode and path.stat().st_mtime_ns > mtime
    assert len(list((programs / "commands").glob("*.json"))) == 1


_SMALL = {  # every registered experiment, small
    "time-varying-regression": ["--T", "60", "--seeds", "2"],
    "online-qp": ["--T", "60", "--seeds", "2"],
    "online-lp": ["--T", "60", "--seeds", "2"],
    "job-scheduling": ["--T", "48", "--seeds", "2"],
    "matrix-completion-movielens": ["--T", "4", "--seeds", "1"],
    "matrix-completion-filmtrust": ["--T", "4", "--seeds", "1"],
    "memory-predictions-horizon": ["--T", "20", "--seeds", "3", "--option", "literal_seeds=2"],
    "memory-predictions-window": [
        "--T",
        "20",
        "--seeds",
        "3",
        "--option",
        "literal_seeds=2",
        "--option",
        "windows=1,2",
    ],
    "gradual-variation": ["--T", "256", "--seeds", "2"],
    "simplex-mirror-prox": ["--T", "256", "--seeds", "2", "--option", "dims=4,8,16"],
    "strongly-convex-sets": ["--T", "200", "--seeds", "2", "--option", "points=3"],
}

_COUNTED_CLI = """
import atexit, json, os, runpy, sys
from ocokit import _executables
atexit.register(lambda: open(os.environ["COUNTS"], "w").write(json.dumps(dict(_executables.counts))))
sys.argv = ["ocokit", *sys.argv[1:]]
runpy.run_module("ocokit.cli", run_name="__main__")
"""


def _numbers(summary: dict) -> dict:
    if isinstance(summary, dict):
        return {k: _numbers(v) for k, v in summary.items() if not k.startswith(("wall_seconds", "provenance"))}
    return [_numbers(v) for v in summary] if isinstance(summary, list) else summary


def test_the_slow_check_below_covers_every_registered_experiment():
    """Those ocokit registers (a fresh process: tests register experiments of their own in this one)."""
    code = "import json, ocokit.experiments as e; print(json.dumps(e.names()))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert sorted(_SMALL) == json.loads(done.stdout)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(_SMALL))
def test_every_experiment_loads_all_its_programs_the_second_time_with_the_same_numbers(tmp_path, name):
    results = {}
    for label, cache in (("off", ""), ("first", tmp_path / "cache"), ("second", tmp_path / "cache")):
        env = {**os.environ, "OCOKIT_CACHE_DIR": str(cache), "COUNTS": str(tmp_path / f"{label}.json")}
        args = ["run", name, *_SMALL[name], "--json", "--out", str(tmp_path / label)]
        done = subprocess.run([sys.executable, "-c", _COUNTED_CLI, *args], env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-3000:]
        counts = json.loads((tmp_path / f"{label}.json").read_text())
        results[label] = _numbers(json.loads(done.stdout)), counts
    programs = results["first"][1]["stored"]
    assert programs >= 1 and results["first"][1] == {"compiled": programs, "stored": programs}
    assert results["second"][1] == {"loaded": programs, "prefetched": programs}
    assert results["off"][1] == {} and results["off"][0] == results["first"][0] == results["second"][0]
