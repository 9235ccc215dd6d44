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

    def swept(comparators=True):
        traj = ocokit.sweep(learner, problem, T, args.runs, chunk_size=args.runs, comparators=comparators)
        traj.loss.block_until_ready()

    def scanned_bare():
        ocokit.run(learner, problem, T, 0, comparators=False).loss.block_until_ready()

    # A 100-run sweep shaped as a grid: 10 step sizes x 10 seeds. Each seed's rounds are drawn once
    # and shared by the 10 learners.
    side = max(1, round(args.runs**0.5))
    grid = ocokit.stack([OGD(eta=0.01 * 2.0**k, decay="inverse_sqrt") for k in range(side)])

    def swept_grid():
        ocokit.sweep(grid, problem, T, side, batched_learner=True, chunk_size=args.runs).loss.block_until_ready()

    # The floor a seed sweep cannot go under: drawing every run's rounds (threefry on the CPU), in a scan
    # over rounds vmapped over seeds like the sweep's, with nothing else done.
    def draw_all(env_keys):
        def body(total, t):
            data = jax.vmap(lambda k: problem.round_data(None, jax.random.fold_in(k, t), t))(env_keys)
            return total + sum(jax.numpy.sum(leaf) for leaf in jax.tree.leaves(data)), None

        return jax.lax.scan(body, 0.0, jax.numpy.arange(1, T + 1))[0]

    draw = jax.jit(draw_all)
    env_keys = jax.vmap(lambda s: ocokit.engine.split_key(jax.random.PRNGKey(s))[0])(jax.numpy.arange(args.runs))

    def drawn():
        draw(env_keys).block_until_ready()

    t_scan = best_of(scanned, args.repeats)
    t_step = best_of(stepped, max(1, args.repeats // 2))
    t_sweep = best_of(swept, args.repeats)
    t_scan_bare = best_of(scanned_bare, args.repeats)
    t_sweep_bare = best_of(lambda: swept(False), args.repeats)
    t_grid = best_of(swept_grid, args.repeats)
    t_draw = best_of(drawn, args.repeats)
    n = args.runs
    print(f"problem: TimeVaryingRegression(dim=10), learner: OGD, T = {T}, device: {jax.devices()[0].platform}")
    print(f"scan vs Python stepping (Session): {t_step / t_scan_bare:8.1f}x faster per round  (target >= 20x)")
    print(f"    scan {T / t_scan_bare:,.0f} rounds/s, stepping {T / t_step:,.0f} rounds/s (no comparators)")
    print(f"{n}-run vmapped seed sweep vs one run:      {t_sweep / t_scan:8.2f}x the wall time  (target <= 5x)")
    print(f"    one run {t_scan * 1e3:.1f} ms, sweep {t_sweep * 1e3:.1f} ms (with static and dynamic regret)")
    print(f"  the same without comparators:           {t_sweep_bare / t_scan_bare:8.2f}x")
    print(f"    one run {t_scan_bare * 1e3:.1f} ms, sweep {t_sweep_bare * 1e3:.1f} ms")
    print(f"  drawing the {n} runs' rounds alone:      {t_draw / t_scan_bare:8.2f}x one run without comparators")
    print(f"    ({t_draw * 1e3:.1f} ms: the RNG floor of a {n}-seed sweep)")
    print(f"{side}x{side} grid sweep (learners x seeds) vs one run: {t_grid / t_scan:8.2f}x the wall time")
    print(f"    ({side * side} runs; each seed's rounds and comparators computed once for the grid)")


if __name__ == "__main__":
    main()
