"""Engine benchmark: ``ocokit.run`` against the floor (a hand-written ``lax.scan``), sweeps, ``Session``.

Run by hand: ``python benchmarks/engine.py [--T 20000] [--repeats 5] [--runs 100]``. On paper 003's Fig. 1
problem (``TimeVaryingRegression(dim=10)``) with OGD (``eta_t = 0.01 / sqrt(t)``), it prints ratios measured
in this one process (compilation excluded: every function is called once before timing; each timing is the
best of ``--repeats``, the candidates interleaved), absolute times only beside them, and the load average
(the ratios are noisy on a loaded machine). Every program is compiled with XLA's defaults (the library's).
Targets (issue 14):

* ``ocokit.run`` vs a hand-written ``lax.scan`` of the same OGD math on the same random numbers (drawn in
  blocks when the engine does, from ``T = ocokit.engine._rounds.BLOCK_FROM_T`` rounds): <= 1.2x. The other
  way of drawing (per round, or in blocks) is printed beside it.
* the ``--runs``-seed vmapped sweep vs one run: <= 3x; the 10 x 10 learner x seed grid vs one run: <= 2x.
* ``run`` with the comparators (best fixed point, per-round optimum) vs ``run`` without: <= 3x (issue 45; a
  10-variable QP per round). ``--comparators-only`` times these two alone.
* ``Session`` per round vs the scan: <= 5x; ``observe_many`` within 1.5x of the scan (sessions are built before
  the timing, and a construction is timed on its own). ``Session`` is also put beside the floor of any path that
  makes one compiled call per round: a jitted ``x + 1`` called on a host array with its result fetched, which
  alone costs several scan rounds on a CPU.
"""

from __future__ import annotations

import argparse
import importlib.util
import os

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

import ocokit  # noqa: E402
from _timing import best_of_each  # noqa: E402
from ocokit.algorithms import OGD  # noqa: E402
from ocokit.engine._rounds import BLOCK_ROUNDS, blocks  # noqa: E402
from ocokit.problems import TimeVaryingRegression  # noqa: E402


def hand_scans(problem: TimeVaryingRegression, T: int, B: int = BLOCK_ROUNDS):
    """The floor: OGD on the problem in a hand-written ``lax.scan``, recording loss and constraints.

    ``per_round`` draws round t inside the scan body (``round_data(None, fold_in(env_key, t), t)``);
    ``blocked`` draws B rounds at once (the same per-round draw, vmapped) and scans them: the same numbers.
    """
    lo, hi = problem.domain.lower, problem.domain.upper
    x0 = problem.domain.center()

    def step(x, data, t):
        r = data["H"] @ x - data["y"]
        cons = data["A"] @ x - data["b"]
        x = jnp.clip(x - 0.01 / jnp.sqrt(t.astype(x.dtype)) * (data["H"].T @ r), lo, hi)
        return x, (0.5 * r @ r, cons)

    def draw(env_key, t):
        return problem.round_data(None, jax.random.fold_in(env_key, t), t)

    @jax.jit
    def per_round(env_key):
        body = lambda x, t: step(x, draw(env_key, t), t)  # noqa: E731
        return jax.lax.scan(body, x0, jnp.arange(1, T + 1, dtype=jnp.int32))[1]

    @jax.jit
    def blocked(env_key):
        def block(x, ts):
            datas = jax.vmap(lambda t: draw(env_key, t))(ts)
            return jax.lax.scan(lambda x, dt: step(x, *dt), x, (datas, ts))

        ts = jnp.arange(1, -(-T // B) * B + 1, dtype=jnp.int32).reshape(-1, B)
        return jax.tree.map(lambda a: a.reshape(-1, *a.shape[2:])[:T], jax.lax.scan(block, x0, ts)[1])

    return per_round, blocked


def comparators_ratio(problem, learner, T: int, repeats: int) -> None:
    """Prints ``run`` with the default comparators vs ``run`` without them (one process, interleaved), and the floor
    of an active-set per-round optimum: its iterations per block of rounds (the slowest round of a block sets
    them, the block being vmapped) times one KKT solve per round, batched as the engine batches a block."""
    ready = jax.block_until_ready
    fns = {
        "run": lambda: ready(ocokit.run(learner, problem, T, 0, comparators=False).loss),
        "run, comparators": lambda: ready(ocokit.run(learner, problem, T, 0).loss),
    }
    floor = importlib.util.find_spec("ocokit.problems._active_set") is not None
    if floor:
        kkt_solve, iterations = _active_set_floor(problem, T)
        fns["KKT solve per round"] = lambda: ready(kkt_solve())
    best = best_of_each(fns, repeats)
    t = {name: b.wall for name, b in best.items()}
    print(f"problem: TimeVaryingRegression(dim=10), learner: OGD, T = {T}, device: {jax.devices()[0].platform}")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    print(f"run with comparators vs without:         {t['run, comparators'] / t['run']:6.2f}x  (target <= 3x)")
    print(
        f"    with {1e6 * t['run, comparators'] / T:.2f} us/round, without {1e6 * t['run'] / T:.2f} us/round; "
        f"in CPU time {best['run, comparators'].cpu / best['run'].cpu:.2f}x (steadier on a loaded machine)"
    )
    if floor:
        solve = t["KKT solve per round"] / (T // BLOCK_ROUNDS * BLOCK_ROUNDS)  # whole blocks only
        bound = t["run"] / T + iterations * solve
        print(
            f"    floor of the active set: {iterations:.1f} iterations per block x {1e6 * solve:.2f} us (one batched "
            f"KKT LU per round) + the run = {1e6 * bound:.2f} us/round, {bound * T / t['run']:.2f}x the run"
        )


def _active_set_floor(problem, T: int):
    """``(kkt_solve, iterations)``: a function doing one (n + N) x (n + N) LU solve per round of the run, vmapped over
    blocks of ``BLOCK_ROUNDS`` rounds in a scan as the engine does, and the mean over blocks of the most active-set
    iterations a round of the block takes."""
    from ocokit.problems._active_set import solve_box_affine_qp

    env_key = ocokit.engine.split_key(jax.random.PRNGKey(0))[0]
    ts = jnp.arange(1, T + 1, dtype=jnp.int32)
    datas = jax.vmap(lambda t: problem.round_data(None, jax.random.fold_in(env_key, t), t))(ts)
    B = BLOCK_ROUNDS
    blocked = jax.tree.map(lambda a: a[: T // B * B].reshape(T // B, B, *a.shape[1:]), datas)
    lo, hi = problem.domain.lower, problem.domain.upper

    def iterations(d):
        P, q = d["H"].T @ d["H"], -d["H"].T @ d["y"]
        return solve_box_affine_qp(P, q, d["A"], d["b"], lo, hi, jnp.zeros_like(lo)).iterations

    per_block = jax.jit(lambda b: jax.lax.map(lambda d: jnp.max(jax.vmap(iterations)(d)), b))(blocked)

    def kkt(d):
        n, m = d["A"].shape[1], d["A"].shape[0]
        K = jnp.block([[d["H"].T @ d["H"] + 1e-9 * jnp.eye(n), d["A"].T], [d["A"], jnp.zeros((m, m))]])
        return jnp.linalg.solve(K, jnp.concatenate([d["H"].T @ d["y"], d["b"]]))

    solve = jax.jit(lambda b: jax.lax.map(jax.vmap(kkt), b))
    return (lambda: solve(blocked)), float(jnp.mean(per_block.astype(float)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--T", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--session-rounds", type=int, default=2000)
    parser.add_argument("--comparators-only", action="store_true", help="time run with and without comparators")
    args = parser.parse_args()
    T, n = args.T, args.runs
    problem, learner = TimeVaryingRegression(dim=10), OGD(eta=0.01, decay="inverse_sqrt")
    if args.comparators_only:
        comparators_ratio(problem, learner, T, args.repeats)
        return
    env_key = ocokit.engine.split_key(jax.random.PRNGKey(0))[0]
    B = blocks(problem, None, env_key, T)[1]  # the engine's rounds per block (1: drawn round by round)
    per_round, blocked = hand_scans(problem, T, B if B > 1 else min(T, BLOCK_ROUNDS))
    ours = ocokit.run(learner, problem, T, 0, comparators=False)
    np.testing.assert_allclose(blocked(env_key)[0], ours.loss, rtol=1e-10)  # the same math, the same numbers
    np.testing.assert_allclose(per_round(env_key)[0], ours.loss, rtol=1e-10)
    floor, other = ("hand, drawn in blocks", "hand, drawn per round")[:: 1 if B > 1 else -1]
    hand = blocked if B > 1 else per_round

    env_keys = jax.vmap(lambda s: ocokit.engine.split_key(jax.random.PRNGKey(s))[0])(jnp.arange(n))
    hand_sweep = jax.jit(jax.vmap(hand))  # the floor of a seed sweep: the hand-written scan, vmapped
    side = max(1, round(n**0.5))
    grid = ocokit.stack([OGD(eta=0.01 * 2.0**k, decay="inverse_sqrt") for k in range(side)])
    ready = jax.block_until_ready
    fns = {
        "hand, drawn per round": lambda: ready(per_round(env_key)),
        "hand, drawn in blocks": lambda: ready(blocked(env_key)),
        "run": lambda: ready(ocokit.run(learner, problem, T, 0, comparators=False).loss),
        "run, comparators": lambda: ready(ocokit.run(learner, problem, T, 0).loss),
        "hand, sweep": lambda: ready(hand_sweep(env_keys)),
        "sweep": lambda: ready(ocokit.sweep(learner, problem, T, n, chunk_size=n, comparators=False).loss),
        "grid": lambda: ready(
            ocokit.sweep(grid, problem, T, side, batched_learner=True, chunk_size=n, comparators=False).loss
        ),
    }
    t = {name: best.wall for name, best in best_of_each(fns, args.repeats).items()}

    R = min(args.session_rounds, T)
    datas = jax.vmap(lambda s: problem.round_data(None, jax.random.fold_in(env_key, s), s))(jnp.arange(1, R + 1))
    host = [jax.tree.map(lambda a, i=i: np.asarray(a[i]), datas) for i in range(R)]

    def prebuilt():
        """Fresh sessions, built before the timing (a Session's construction is timed on its own): one per call."""
        return iter([ocokit.Session(learner, problem, horizon=R, key=0) for _ in range(args.repeats + 1)])

    def stepped():
        fresh = prebuilt()

        def rounds():
            session = next(fresh)
            for data in host:
                session.decide()
                session.observe(data)

        return rounds

    fresh = prebuilt()

    def burst():
        next(fresh).observe_many(datas)

    one = jax.jit(lambda x: x + 1.0)  # the floor of any one-call-per-round path: one array in, one out
    x_host = np.zeros(10)

    def dispatches():
        for _ in range(R):
            np.asarray(one(x_host))

    def built():
        ocokit.Session(learner, problem, horizon=R, key=0)

    sessions = {"session": stepped(), "observe_many": burst, "dispatch": dispatches, "construction": built}
    ts = {name: best.wall for name, best in best_of_each(sessions, args.repeats).items()}

    us = lambda seconds, rounds=T: f"{1e6 * seconds / rounds:.2f} us/round"  # noqa: E731
    print(f"problem: TimeVaryingRegression(dim=10), learner: OGD, T = {T}, device: {jax.devices()[0].platform}")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    way = floor.removeprefix("hand, drawn ")
    print(f"{f'run vs the hand-written scan ({way}):':<41}{t['run'] / t[floor]:6.2f}x  (target <= 1.2x)")
    print(f"    run {us(t['run'])}, hand scan {us(t[floor])} drawn {way} (as the engine draws at this T), ", end="")
    print(
        f"{us(t[other])} drawn {other.removeprefix('hand, drawn ')}; run with comparators {us(t['run, comparators'])}"
    )
    print(f"run with comparators vs without:         {t['run, comparators'] / t['run']:6.2f}x  (target <= 3x)")
    print(f"{n}-seed vmapped sweep vs one run:        {t['sweep'] / t['run']:6.2f}x  (target <= 3x)")
    print(
        f"    sweep {t['sweep'] * 1e3:.1f} ms, one run {t['run'] * 1e3:.1f} ms (no comparators); the floor, the hand ",
        end="",
    )
    print(
        f"scan vmapped over the {n} seeds: {t['hand, sweep'] * 1e3:.1f} ms ({t['hand, sweep'] / t['run']:.2f}x one run)"
    )
    print(f"{side}x{side} grid sweep (learners x seeds) vs one run: {t['grid'] / t['run']:6.2f}x  (target <= 2x)")
    print(f"    grid {t['grid'] * 1e3:.1f} ms ({side * side} runs; each seed's rounds drawn once for the grid)")
    scan_round = t["run"] / T
    print(f"Session per round vs the scan:           {ts['session'] / R / scan_round:6.1f}x  (target <= 5x)")
    print(f"    {us(ts['session'], R)} over {R} rounds (decide + observe, data from the host)")
    print(
        f"    the floor of one compiled call per round (jit(x + 1) on a host array, the result fetched): "
        f"{us(ts['dispatch'], R)}, {ts['dispatch'] / R / scan_round:.1f}x the scan's round"
    )
    print(f"observe_many vs the scan:                {ts['observe_many'] / R / scan_round:6.2f}x  (target <= 1.5x)")
    print(f"    {us(ts['observe_many'], R)} ({R} rounds in one burst, compiled scan)")
    print(f"    a Session's construction (not counted above): {ts['construction'] * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
