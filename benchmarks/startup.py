"""Start-up benchmark: a newcomer's ``ocokit run NAME`` end to end, against today's main, first and second time.

Run by hand: ``python benchmarks/startup.py [--experiment time-varying-regression] [--T T] [--seeds S]``.
In this one script run, each command in a fresh Python process, with the experiment's defaults unless
``--T`` / ``--seeds`` are given:

1. the command as of ``OLD`` (its ``src/`` taken from this checkout's git into a temporary folder), with an
   empty compilation cache folder;
2. today's command, with an empty compilation cache folder (``OCOKIT_CACHE_DIR``): a newcomer's first run;
3. today's command again into a new output folder, with the cache the first one filled.

Then, in this process, the compile and run times of the experiment's comparators' program (what it computes once
per seed) with XLA's defaults and with the options the engine compiles it with (``engine._QUICK_COMPILE``), and the
largest relative difference of their outputs.

It prints the three wall times (compilation included: each process starts cold) and the ratios asked for by
issue 14: old / first (target >= 2x) and first / second (target >= 3x). The data folder is ``--data``,
``OCOKIT_DATA`` or ``../shared/data``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _git import ROOT, folder_at

OLD = "dd5d91d"
"""Today's main when issue 14 was filed (its start-up is the baseline)."""


def timed(args: list[str], env: dict[str, str]) -> float:
    """Wall time of ``python -m ocokit.cli ARGS`` in a fresh process (it must succeed)."""
    tic = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "ocokit.cli", *args], env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - tic
    if done.returncode != 0:
        raise SystemExit(f"ocokit {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return seconds


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", default="time-varying-regression")
    parser.add_argument("--T", type=int, default=None)
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--data", default=None)
    args = parser.parse_args()
    data = args.data or os.environ.get("OCOKIT_DATA") or str(ROOT.parent / "shared" / "data")
    extra = [*(["--T", str(args.T)] if args.T else []), *(["--seeds", str(args.seeds)] if args.seeds else [])]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        base = {k: v for k, v in os.environ.items() if k not in ("JAX_COMPILATION_CACHE_DIR", "PYTHONPATH")}
        base["OCOKIT_DATA"] = data
        command = ["run", args.experiment, *extra, "--data", data]
        old_src = folder_at(OLD, "src", tmp / "old")
        times = {}
        if old_src is not None:
            env = base | {"PYTHONPATH": str(old_src), "OCOKIT_CACHE_DIR": str(tmp / "old-cache")}
            times["old"] = timed([*command, "--out", str(tmp / "out-old")], env)
        env = base | {"PYTHONPATH": str(ROOT / "src"), "OCOKIT_CACHE_DIR": str(tmp / "cache")}
        times["first"] = timed([*command, "--out", str(tmp / "out-1")], env)
        times["second"] = timed([*command, "--out", str(tmp / "out-2")], env)
    print(f"ocokit {' '.join(command[:-2])}: each command in a fresh process, compilation included")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    if "old" in times:
        print(f"    today's main ({OLD}), empty cache: {times['old']:.1f} s")
    print(f"    now, first invocation (empty cache): {times['first']:.1f} s")
    print(f"    now, second invocation (new output folder, the cache the first filled): {times['second']:.1f} s")
    if "old" in times:
        print(f"first invocation vs today's main: {times['old'] / times['first']:.2f}x faster  (target >= 2x)")
    else:
        print(f"today's main ({OLD}) not found in git: no comparison")
    print(f"second vs first invocation:      {times['first'] / times['second']:.2f}x faster  (target >= 3x)")
    if args.experiment == "time-varying-regression":
        comparators_compile(args.T or 1000, args.seeds or 20)


if __name__ == "__main__":
    main()
