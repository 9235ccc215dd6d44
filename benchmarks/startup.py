"""Start-up benchmark: a newcomer's ``ocokit run NAME`` end to end, against today's main, first and second time.

Run by hand: ``python benchmarks/startup.py [--experiment time-varying-regression] [--T T] [--seeds S]
[--repeats R]``.
In this one script run, each command in a fresh Python process, with the experiment's defaults unless
``--T`` / ``--seeds`` are given:

1. the command as of ``OLD`` (its ``src/`` taken from this checkout's git into a temporary folder), with an
   empty compilation cache folder;
2. today's command, with an empty compilation cache folder (``OCOKIT_CACHE_DIR``): a newcomer's first run;
3. today's command again into a new output folder, with the cache the first one filled.

With ``--repeats R`` the three run R times in turn, each round with new cache folders; each wall time printed is
the best of its R (all R beside it), and each ratio is of the best times, every round's own ratio beside it (a
single run of these commands varied by 6-10% between rounds on a 2-core machine).

Then, for ``time-varying-regression``, its five learners swept in a fresh process each way: their rounds drawn
inside each learner's scan, drawn up front by one shared program (the engine's default for small rounds), and drawn
up front with short sweeps compiled cheaply as ``ocokit run`` does (``engine.compile_short_sweeps``): wall and
compile times, the time of the same sweeps called again in that process, and the largest difference of the numbers
from the library's default; and, in this process, the compile and run times of the
experiment's comparators' program (what it computes once
per seed) with XLA's defaults and with the options the engine compiles it with (``engine._QUICK_COMPILE``), and the
largest relative difference of their outputs; and, in this process, the experiment's comparison run by the
harness with its programs compiled, four ways: every unit played ahead while one thread computes the comparators,
the storing thread computing the chunks that thread has not taken while it waits (an in-process executor's way for a
short comparison), the same with a comparator chunk as large as a unit, one unit at a time while two threads compute
them (its way for a longer one), and the comparators computed in each unit (a Ray unit's way), interleaved, with
whether the summaries agree.

It prints the three wall times (compilation included: each process starts cold) and the ratios asked for by
issue 14: old / first (target >= 2x) and first / second (target >= 3x). Beside each wall time, where it went:
the seconds JAX reported tracing, lowering (jaxpr to MLIR) and compiling (XLA; loading a cached program counts)
through ``jax.monitoring``, counted in that process by a listener registered before the command runs, and the
rest (starting Python, imports, running the programs, writing results and plots); then what the engine's program
cache did in it (``ocokit._executables.counts``: programs compiled, stored, loaded, prefetched). The data folder
is ``--data``, ``OCOKIT_DATA`` or ``../shared/data``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from _git import ROOT, folder_at

OLD = "dd5d91d"
"""Today's main when issue 14 was filed (its start-up is the baseline)."""


PHASES = {
    "trace": "/jax/core/compile/jaxpr_trace_duration",
    "lower": "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "compile": "/jax/core/compile/backend_compile_duration",
}
"""The ``jax.monitoring`` duration events summed per invocation, by the name printed."""

_CLI = """
import atexit, json, os, runpy, sys
import jax.monitoring
seconds = {}
jax.monitoring.register_event_duration_secs_listener(
    lambda event, secs, **_: seconds.__setitem__(event, seconds.get(event, 0.0) + secs))

def dump():
    try:
        from ocokit._executables import counts
    except ImportError:  # an ocokit from before the engine's program cache
        counts = {}
    open(os.environ["STARTUP_PHASES"], "w").write(json.dumps({**seconds, "programs": dict(counts)}))

atexit.register(dump)
sys.argv = ["ocokit", *sys.argv[1:]]
runpy.run_module("ocokit.cli", run_name="__main__")
"""
"""``python -m ocokit.cli ARGS``, with a listener summing JAX's duration events into ``$STARTUP_PHASES``, and what
the engine's program cache did (``ocokit._executables.counts``)."""


def timed(args: list[str], env: dict[str, str], events_file: Path) -> tuple[float, dict[str, Any]]:
    """Wall time of ``ocokit ARGS`` in a fresh process (it must succeed), its seconds per :data:`PHASES`, and under
    ``"programs"`` what the engine's program cache did (empty before it existed)."""
    tic = time.perf_counter()
    env = env | {"STARTUP_PHASES": str(events_file)}
    done = subprocess.run([sys.executable, "-c", _CLI, *args], env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - tic
    if done.returncode != 0:
        raise SystemExit(f"ocokit {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    events = json.loads(events_file.read_text())
    return seconds, {**{name: events.get(event, 0.0) for name, event in PHASES.items()}, "programs": events["programs"]}


def breakdown(wall: float, phases: dict[str, Any]) -> str:
    """``wall``'s seconds per phase, the rest last, then what the engine's program cache did."""
    seconds = {name: phases[name] for name in PHASES}
    parts = [f"{name} {secs:.1f} s" for name, secs in seconds.items()]
    programs = ", ".join(f"{what} {n}" for what, n in sorted(phases["programs"].items()))
    return ", ".join([*parts, f"the rest {wall - sum(seconds.values()):.1f} s"]) + (
        f"; engine programs: {programs}" if programs else ""
    )


_LEARNERS = """
import json, sys, time
import jax, jax.monitoring, numpy as np
jax.config.update("jax_enable_x64", True)
seconds = {}
jax.monitoring.register_event_duration_secs_listener(
    lambda event, secs, **_: seconds.__setitem__(event, seconds.get(event, 0.0) + secs))
from ocokit import engine, harness
import ocokit.experiments
if sys.argv[1] == "scan":
    engine.UPFRONT_BYTES = 0  # every learner's program draws its rounds inside its scan
if sys.argv[1] == "short":
    engine.compile_short_sweeps(engine.SHORT_SWEEP_ROUNDS)  # as ocokit run does
T, S = int(sys.argv[2]), int(sys.argv[3])
exp = harness.get("time-varying-regression")
problem = exp.study.make_problem(T, None, exp.parse_options({}))
info = harness.ProblemInfo.of(problem, T)


def sweeps():
    out = {}
    for algo in exp.algorithms:
        traj = engine.sweep(algo.make(info), problem, T, S, chunk_size=exp.study.chunk_size, comparators=False)
        out[algo.label] = {"loss": np.asarray(traj.loss), "constraints": np.asarray(traj.constraints)}
    return out


tic = time.perf_counter()
out = sweeps()
wall = time.perf_counter() - tic
compiled = seconds.get("/jax/core/compile/backend_compile_duration", 0.0)
tic = time.perf_counter()
sweeps()
again = time.perf_counter() - tic
np.savez(sys.argv[4], **{f"{a}/{k}": v for a, d in out.items() for k, v in d.items()})
print(json.dumps({"wall": wall, "compile": compiled, "again": again}))
"""
"""Sweep Fig. 1's five learners (``sys.argv``: ``scan``, ``upfront`` or ``short``, T, seeds, an ``.npz`` for the
numbers) in this fresh process, as ``ocokit run`` does (chunks of the experiment's size, no comparators), then the
same sweeps again; print the first wall time, the seconds XLA compiled and the second wall time."""


def clean_environment(**extra: str) -> dict[str, str]:
    """This process's environment without a JAX compilation cache, a ``PYTHONPATH`` of its own or
    ``PYTHONDONTWRITEBYTECODE``, plus ``extra``: what each timed command starts from. Python writes its bytecode
    caches as it does by default: today's ``src/`` is compiled to bytecode once (its first command), the old
    copy in each round's new folder every round (about 0.1 s of its time)."""
    drop = ("JAX_COMPILATION_CACHE_DIR", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE")
    return {k: v for k, v in os.environ.items() if k not in drop} | extra


def learners_compile(T: int, seeds: int) -> None:
    """Fig. 1's five learners swept in a fresh process each way: every learner's program drawing its rounds in its
    scan (``engine.UPFRONT_BYTES = 0``), the rounds drawn up front by one program they share (the library's default
    for small rounds), and that with short sweeps compiled cheaply (``engine.compile_short_sweeps``, as ``ocokit run``
    does); the wall times, XLA's compile seconds, the sweeps' time when called again, and the largest difference of
    the losses and constraint values from the library's default, relative to their scale."""
    ways = {"scan": "in each learner's scan", "upfront": "up front, shared", "short": "up front, short compiles"}
    with tempfile.TemporaryDirectory() as tmp:
        env = clean_environment(PYTHONPATH=str(ROOT / "src"))
        got = {}
        for way in ways:
            npz = Path(tmp) / f"{way}.npz"
            done = subprocess.run(
                [sys.executable, "-c", _LEARNERS, way, str(T), str(seeds), str(npz)],
                env=env, capture_output=True, text=True,
            )  # fmt: skip
            if done.returncode != 0:
                raise SystemExit(f"the learners' sweeps ({way}) failed:\n{done.stderr[-2000:]}")
            got[way] = json.loads(done.stdout.strip().splitlines()[-1]), dict(np.load(npz))
    times, numbers = {w: got[w][0] for w in ways}, {w: got[w][1] for w in ways}

    def diff(way: str) -> float:
        a, b = numbers["upfront"], numbers[way]
        return max(float(np.max(np.abs(a[k] - b[k])) / max(np.max(np.abs(a[k])), 1e-300)) for k in a)

    print(f"Fig. 1's five learners swept, T = {T}, {seeds} seeds, no comparators, a fresh process each way:")
    for way, label in ways.items():
        t = times[way]
        print(f"    rounds drawn {label + ':':<26} {t['wall']:.2f} s, XLA compiled for {t['compile']:.2f} s, "
              f"called again {t['again'] * 1e3:.0f} ms; largest difference from up front: {diff(way):.1e}")  # fmt: skip
    scan, upfront, short = times["scan"], times["upfront"], times["short"]
    print(f"    up front: {scan['wall'] / upfront['wall']:.2f}x faster end to end, "
          f"{scan['compile'] / upfront['compile']:.2f}x less compiling")  # fmt: skip
    print(f"    short compiles: {upfront['wall'] / short['wall']:.2f}x faster end to end, "
          f"{upfront['compile'] / short['compile']:.2f}x less compiling, "
          f"{short['again'] / upfront['again']:.2f}x the time called again")  # fmt: skip


def comparators_compile(T: int, seeds: int) -> None:
    """Compile and run the Fig. 1 comparators' program twice in this process: XLA's defaults, the engine's options."""
    import equinox as eqx
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    from ocokit import engine
    from ocokit.problems import TimeVaryingRegression

    problem, keys = TimeVaryingRegression(), jnp.stack([jax.random.PRNGKey(s) for s in range(seeds)])
    outs = {}
    print(f"comparators' program, time-varying regression, T = {T}, {seeds} seeds, in this process:")
    for label, options in (("XLA defaults", {}), ("engine's options", engine._QUICK_COMPILE)):
        program = eqx.filter_jit(engine._comparators_impl, compiler_options=options)
        tic = time.perf_counter()
        compiled = program.lower(problem, T, keys).compile()
        compile_s = time.perf_counter() - tic
        jax.block_until_ready(compiled(problem, T, keys))
        tic = time.perf_counter()
        outs[label] = jax.block_until_ready(compiled(problem, T, keys))
        print(f"    {label}: compile {compile_s:.2f} s, run {time.perf_counter() - tic:.3f} s")
    a, b = outs.values()
    diff = max(float(jnp.max(jnp.abs(a[k] - b[k]) / (1.0 + jnp.abs(a[k])))) for k in a)
    print(f"    largest relative difference of the comparator losses: {diff:.1e}")


def comparators_overlap(T: int, seeds: int, repeats: int) -> None:
    """Fig. 1's comparison run by the harness in this process, its programs compiled by a first run, into new
    folders, four ways: every unit played ahead while one thread computes the comparators, the storing thread
    lending a hand (what an in-process executor does with a short comparison,
    :data:`ocokit.harness.PLAY_AHEAD_VALUES`), the same with comparator chunks as large as a unit
    (``Comparison.comparator_chunk_size``), one unit at a time while two threads compute them (what it does with a
    longer one), and the comparators computed in each unit after its learner plays (what a Ray unit does);
    interleaved, best of ``repeats`` each, with whether the summaries agree."""
    import jax

    jax.config.update("jax_enable_x64", True)
    import ocokit.experiments  # noqa: F401  (registers the experiments)
    from ocokit import executors, harness

    class InUnits(executors.Local):
        in_process = False

    exp, default = harness.get("time-varying-regression"), harness.PLAY_AHEAD_VALUES
    whole = dataclasses.replace(exp, study=dataclasses.replace(exp.study, comparator_chunk_size=exp.study.chunk_size))
    ways = {  # name: (label, experiment, executor, PLAY_AHEAD_VALUES)
        "ahead": ("units played ahead, the comparators in one thread", exp, executors.Local(), default),
        "whole": ("the same, a comparator chunk per unit", whole, executors.Local(), default),
        "threads": ("one unit at a time, the comparators in two threads", exp, executors.Local(), 0),
        "units": ("the comparators in each unit", exp, InUnits(), 0),
    }
    walls = {name: [] for name in ways}

    def run(name: str, out: Path) -> None:
        _, experiment, executor, bound = ways[name]
        harness.PLAY_AHEAD_VALUES = bound
        try:
            experiment.run(T=T, seeds=seeds, out=out, executor=executor)
        finally:
            harness.PLAY_AHEAD_VALUES = default

    with tempfile.TemporaryDirectory() as tmp:
        for name in ways:  # compiles every program the four ways use
            run(name, Path(tmp) / f"warm-{name}")
        for r in range(repeats):
            for name in ways:
                tic = time.perf_counter()
                run(name, Path(tmp) / f"{name}-{r}")
                walls[name].append(time.perf_counter() - tic)
        summaries = []
        for name in ways:
            summary = json.loads((Path(tmp) / f"{name}-0" / "summary.json").read_text())["algorithms"]
            for stats in summary.values():
                stats.pop("wall_seconds_per_round")
            summaries.append(summary)
    best = {name: min(w) for name, w in walls.items()}
    print(f"Fig. 1's comparison in this process (T = {T}, {seeds} seeds), programs compiled, new folders:")
    for name, (label, _, _, _) in ways.items():
        print(f"    {label}: {best[name]:.2f} s (best of {repeats}: {', '.join(f'{w:.2f}' for w in walls[name])} s)")
    print(
        f"    played ahead {best['whole'] / best['ahead']:.2f}x faster with comparator chunks of "
        f"{exp.study.comparator_chunk_size} seeds than of {exp.study.chunk_size} (a unit), "
        f"{best['threads'] / best['ahead']:.2f}x faster than one unit at a time, which is "
        f"{best['units'] / best['threads']:.2f}x faster than in each unit; the same summary: "
        f"{all(s == summaries[0] for s in summaries)}"
    )


def invocations(command: list[str], base: dict[str, str], tmp: Path) -> tuple[dict[str, float], dict[str, Any]]:
    """One round of the three commands (old, first, second) with fresh cache folders under ``tmp``: their wall
    times and phases (no ``"old"`` when :data:`OLD` is not in git)."""
    times, phases = {}, {}
    old_src = folder_at(OLD, "src", tmp / "old")
    if old_src is not None:
        env = base | {"PYTHONPATH": str(old_src), "OCOKIT_CACHE_DIR": str(tmp / "old-cache")}
        times["old"], phases["old"] = timed([*command, "--out", str(tmp / "out-old")], env, tmp / "old.json")
    env = base | {"PYTHONPATH": str(ROOT / "src"), "OCOKIT_CACHE_DIR": str(tmp / "cache")}
    times["first"], phases["first"] = timed([*command, "--out", str(tmp / "out-1")], env, tmp / "first.json")
    times["second"], phases["second"] = timed([*command, "--out", str(tmp / "out-2")], env, tmp / "second.json")
    return times, phases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", default="time-varying-regression")
    parser.add_argument("--T", type=int, default=None)
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--data", default=None)
    parser.add_argument("--repeats", type=int, default=1, help="rounds of the three commands (best of them)")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error(f"--repeats must be an integer >= 1, got {args.repeats}")
    data = args.data or os.environ.get("OCOKIT_DATA") or str(ROOT.parent / "shared" / "data")
    extra = [*(["--T", str(args.T)] if args.T else []), *(["--seeds", str(args.seeds)] if args.seeds else [])]
    base = clean_environment(OCOKIT_DATA=data)
    command = ["run", args.experiment, *extra, "--data", data]
    rounds = []
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            rounds.append(invocations(command, base, Path(tmp)))
    print(f"ocokit {' '.join(command[:-2])}: each command in a fresh process, compilation included")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    labels = {
        "old": f"today's main ({OLD}), empty cache",
        "first": "now, first invocation (empty cache)",
        "second": "now, second invocation (new output folder, the cache the first filled)",
    }
    best: dict[str, float] = {}
    for name, label in labels.items():
        if name not in rounds[0][0]:
            continue
        walls = [times[name] for times, _ in rounds]
        i = min(range(len(walls)), key=walls.__getitem__)
        best[name] = walls[i]
        each = f" (best of {len(walls)}: {', '.join(f'{w:.1f}' for w in walls)} s)" if len(walls) > 1 else ""
        print(f"    {label}: {walls[i]:.1f} s{each}")
        print(f"        {breakdown(walls[i], rounds[i][1][name])}")

    def ratio(slow: str, fast: str, target: str) -> str:
        each = [times[slow] / times[fast] for times, _ in rounds]
        spread = f"; each round: {', '.join(f'{r:.2f}x' for r in each)}" if len(each) > 1 else ""
        return f"{best[slow] / best[fast]:.2f}x faster  (target >= {target}{spread})"

    if "old" in best:
        print(f"first invocation vs today's main: {ratio('old', 'first', '2x')}")
    else:
        print(f"today's main ({OLD}) not found in git: no comparison")
    print(f"second vs first invocation:      {ratio('first', 'second', '3x')}")
    if args.experiment == "time-varying-regression":
        learners_compile(args.T or 1000, args.seeds or 20)
        comparators_compile(args.T or 1000, args.seeds or 20)
        comparators_overlap(args.T or 1000, args.seeds or 20, max(args.repeats, 3))


if __name__ == "__main__":
    main()
