"""Engine benchmark: the compiled scan against Python stepping, and a 100-run sweep against one run.

Run by hand: ``python benchmarks/engine.py [--T 2000] [--repeats 5]``. Prints ratios measured in this
process (compilation excluded: every function is called once before timing); absolute times are shown
only beside them. Targets (issue 2): scan >= 20x faster per round than Python stepping at d = 10; a
100-run vmapped sweep at most 5x the wall time of one run.
"""

from __future__ import annotations

import argparse
import time

import jax

jax.config.update("jax_enable_x64", True)

import ocokit  # noqa: E402
from ocokit.algorithms import OGD  # noqa: E402
from ocokit.problems import TimeVaryingRegression  # noqa: E402


def best_of(fn, repeats: int) -> float:
    """The fastest of ``repeats`` timed calls (after one untimed warm-up call)."""
    fn()
    times = []
    for _ in range(repeats):
        tic = time.perf_counter()
        fn()
        times.append(time.perf_counter() - tic)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--T", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--runs", type=int, default=100)
    args = parser.parse_args()
    problem, learner = TimeVaryingRegression(dim=10), OGD(eta=0.01, decay="inverse_sqrt")
    T = args.T

    def scanned():
        ocokit.run(learner, problem, T, 0).loss.block_until_ready()

    env_key = ocokit.engine.split_key(jax.random.PRNGKey(0))[0]
    datas = [problem.round_data(None, jax.random.fold_in(env_key, t), t) for t in range(1, T + 1)]

    def stepped():
        session = ocokit.Session(learner, problem, horizon=T, key=0)
        for data in datas:
            session.decide()
            session.observe(data)

    def swept():
        ocokit.sweep(learner, problem, T, args.runs, chunk_size=args.runs).loss.block_until_ready()

    # The same game with its rounds pre-drawn and stored: what a sweep costs without the RNG work.
    stored = ocokit.problems.CustomProblem(
        domain=problem.domain,
        loss=problem.loss,
        constraints=problem.constraints,
        data=jax.tree.map(lambda *xs: jax.numpy.stack(xs), *datas),
    )

    def scanned_stored():
        ocokit.run(learner, stored, T, 0).loss.block_until_ready()

    def swept_stored():
        ocokit.sweep(learner, stored, T, args.runs, chunk_size=args.runs).loss.block_until_ready()

    t_scan = best_of(scanned, args.repeats)
    t_step = best_of(stepped, max(1, args.repeats // 2))
    t_sweep = best_of(swept, args.repeats)
    t_scan_stored = best_of(scanned_stored, args.repeats)
    t_sweep_stored = best_of(swept_stored, args.repeats)
    print(f"problem: TimeVaryingRegression(dim=10), learner: OGD, T = {T}, device: {jax.devices()[0].platform}")
    print(f"scan vs Python stepping (Session): {t_step / t_scan:8.1f}x faster per round  (target >= 20x)")
    print(f"    scan {T / t_scan:,.0f} rounds/s, stepping {T / t_step:,.0f} rounds/s")
    print(f"{args.runs}-run vmapped sweep vs one run:  {t_sweep / t_scan:8.2f}x the wall time  (target <= 5x)")
    print(f"    one run {t_scan * 1e3:.1f} ms, sweep {t_sweep * 1e3:.1f} ms (rounds drawn in the scan)")
    print(f"{args.runs}-run sweep vs one run, rounds pre-drawn: {t_sweep_stored / t_scan_stored:8.2f}x the wall time")
    print(f"    one run {t_scan_stored * 1e3:.1f} ms, sweep {t_sweep_stored * 1e3:.1f} ms (engine and learner only)")


if __name__ == "__main__":
    main()
