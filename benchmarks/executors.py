"""Executor benchmark: one experiment run locally, on a local Ray of 1 worker and on one of N workers.

Run by hand: ``python benchmarks/executors.py [--experiment time-varying-regression] [--T 1000] [--seeds 20]
[--workers 2] [--option key=value ...] [--data DIR]`` (needs ``pip install "ocokit[ray]"``); for the MovieLens
slice, ``--experiment matrix-completion-movielens --T 300 --seeds 4 --data $OCOKIT_DATA``.

Every configuration runs the experiment twice, each time into a fresh output folder: *cold* (compilation
included: what a user waits for) and then *warm* (the processes have compiled: the work and the executor's
overhead). Each Ray configuration gets a fresh local cluster (``ray.init(num_cpus=W)``; starting it is not
timed, starting its workers is). Prints the device, the wall times and the ratios measured in this process:
Local / Ray-1 (Ray's overhead, also per unit), Ray-1 / Ray-N (scaling; issue 13 asks >= 1.6x from 1 to 2
workers on a unit-heavy experiment) and Local / Ray-N.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)

from ocokit import experiments  # noqa: E402
from ocokit.executors import AbstractExecutor, Local, Ray  # noqa: E402


class Counted(AbstractExecutor):
    """Another executor, counting the units it completed."""

    def __init__(self, inner: AbstractExecutor):
        self.inner, self.units = inner, 0

    def map(self, fn, units):
        """The inner executor's pairs, counted."""
        for pair in self.inner.map(fn, units):
            self.units += 1
            yield pair

    @property
    def workers(self) -> int:
        """The inner executor's."""
        return self.inner.workers


def timed_run(exp, executor: Counted, args, options) -> float:
    """Wall seconds of one run of ``exp`` into a fresh folder (every run computed, none found on disk)."""
    with tempfile.TemporaryDirectory() as out:
        tic = time.perf_counter()
        report = exp.run(T=args.T, seeds=args.seeds, out=Path(out), data_dir=args.data, options=options,
                         executor=executor)  # fmt: skip
        seconds = time.perf_counter() - tic
    if report.skipped_runs:
        raise RuntimeError(f"{report.skipped_runs} runs were found on disk; the timing would be wrong")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", default="time-varying-regression")
    parser.add_argument("--T", type=int, default=1000)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--option", action="append", default=[], help="experiment option key=value")
    parser.add_argument("--data", type=Path, default=os.environ.get("OCOKIT_DATA"))
    args = parser.parse_args()
    import ray

    exp = experiments.get(args.experiment)
    options = dict(item.split("=", 1) for item in args.option)
    devices = jax.devices()
    print(f"device: {len(devices)} x {devices[0].platform} ({devices[0].device_kind}); {os.cpu_count()} CPU cores")
    print(f"{args.experiment}: T = {args.T}, seeds = {args.seeds}, {len(exp.algorithms)} algorithms, options {options}")
    times: dict[str, tuple[float, float]] = {}
    local = Counted(Local())
    times["local"] = timed_run(exp, local, args, options), timed_run(exp, local, args, options)
    units = local.units // 2
    for workers in sorted({1, args.workers}):
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
        executor = Counted(Ray())
        times[f"ray-{workers}"] = timed_run(exp, executor, args, options), timed_run(exp, executor, args, options)
        ray.shutdown()
    for name, (cold, warm) in times.items():
        print(f"{name:>8}: cold {cold:8.2f} s   warm {warm:8.2f} s")
    local, one, many = times["local"], times["ray-1"], times[f"ray-{args.workers}"]
    for i, phase in enumerate(("cold", "warm")):
        print(
            f"{phase}: local / ray-1 = {local[i] / one[i]:.2f}x (overhead {(one[i] - local[i]) / units:+.3f} s per unit"
            f" of {units}); ray-1 / ray-{args.workers} = {one[i] / many[i]:.2f}x; "
            f"local / ray-{args.workers} = {local[i] / many[i]:.2f}x"
        )


if __name__ == "__main__":
    main()
