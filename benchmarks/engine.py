"""Engine benchmark: ``ocokit.run`` against the floor (a hand-written ``lax.scan``), sweeps, ``Session``.

Run by hand: ``python benchmarks/engine.py [--T 20000] [--repeats 5] [--runs 100]``. On paper 003's Fig. 1
problem (``TimeVaryingRegression(dim=10)``) with OGD (``eta_t = 0.01 / sqrt(t)``), it prints ratios measured
in this one process (compilation excluded: every function is called once before timing; each timing is the
best of ``--repeats``, the candidates interleaved), absolute times only beside them, and the load average
(the ratios are noisy on a loaded machine). Targets (issue 14):

* ``ocokit.run`` vs a hand-written ``lax.scan`` of the same OGD math on the same random numbers (drawn in
  blocks, as the engine does): <= 1.2x. The per-round-drawn hand scan is printed beside it.
* ``ocokit.run`` per round vs today's main (the engine of commit ``OLD_ENGINE``, loaded from git into this
  process, the rest of the library shared, except COLDQ's per-round solver, also loaded as of ``OLD_ENGINE``),
  OGD and COLDQ (Table 3): >= 3x faster.
* the ``--runs``-seed vmapped sweep vs one run: <= 3x; the 10 x 10 learner x seed grid vs one run: <= 2x.
* ``Session`` per round vs the scan: <= 5x; ``observe_many`` within 1.5x of the scan (sessions are built before
  the timing, and a construction is timed on its own). ``Session`` is also timed as it was at ``OLD_ENGINE``,
  ``OLD_SESSION``, ``UNPACKED_SESSION`` and ``STEADY_SESSION`` (those engines loaded from git), in this process,
  with COLDQ as well as OGD against ``STEADY_SESSION``, and against the floor of any path that makes one compiled
  call per round: a jitted ``x + 1`` called on a host array with its result fetched, which alone costs several
  scan rounds on a CPU. The Session's round is also taken apart: a program that computes nothing from the arrays
  its round program takes (what one call with those arguments costs, its data on the device and from the host), and
  the round's own program with each round's data already on the device.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import types

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

import ocokit  # noqa: E402
from _git import module_at  # noqa: E402
from _timing import best_of_each  # noqa: E402
from ocokit.algorithms import COLDQ, OGD, ProblemInfo, _queue_common  # noqa: E402
from ocokit.problems import TimeVaryingRegression  # noqa: E402

OLD_ENGINE = "dd5d91d"
"""Today's main when the block-drawn engine was written: its ``src/ocokit/engine.py`` is the baseline."""
OLD_SESSION = "6df185a"
"""The engine before the Session's one-vector round (the program returns ``[f_t, g_t, bad, x_{t+1}]``)."""
UNPACKED_SESSION = "0f86869"
"""The engine before the Session packed its arrays into a few buffers per call (``engine._Layout``)."""
STEADY_SESSION = "cb3b6ac"
"""The engine before the Session's carry was laid out for the types its rounds return (``engine._steady_layout``)."""


def old_engine(commit: str = OLD_ENGINE) -> types.ModuleType | None:
    """``ocokit.engine`` as of ``commit`` (from this checkout's git), or ``None`` if unavailable."""
    return module_at(commit, "src/ocokit/engine.py", f"ocokit_engine_{commit}")


def old_solver(commit: str = OLD_ENGINE) -> types.ModuleType | None:
    """COLDQ's per-round solver module (``ocokit.algorithms._hinge_prox``) as of ``commit``, or ``None``."""
    return module_at(commit, "src/ocokit/algorithms/_hinge_prox.py", f"ocokit_hinge_prox_{commit}")


@contextlib.contextmanager
def solving_with(module: types.ModuleType):
    """Queue learners solve their per-round step with ``module``'s ``hinge_prox_step`` inside the block: a
    program traced there (the old engine's COLDQ run, compiled on its first call) keeps that solver."""
    saved = _queue_common.hinge_prox_step
    _queue_common.hinge_prox_step = module.hinge_prox_step
    try:
        yield
    finally:
        _queue_common.hinge_prox_step = saved


def hand_scans(problem: TimeVaryingRegression, T: int, B: int = 250):
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--T", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--session-rounds", type=int, default=2000)
    args = parser.parse_args()
    T, n = args.T, args.runs
    problem, learner = TimeVaryingRegression(dim=10), OGD(eta=0.01, decay="inverse_sqrt")
    coldq = COLDQ.from_paper(ProblemInfo.of(problem, T), table=3)
    env_key = ocokit.engine.split_key(jax.random.PRNGKey(0))[0]
    per_round, blocked = hand_scans(problem, T)
    ours = ocokit.run(learner, problem, T, 0, comparators=False)
    np.testing.assert_allclose(blocked(env_key)[0], ours.loss, rtol=1e-10)  # the same math, the same numbers

    env_keys = jax.vmap(lambda s: ocokit.engine.split_key(jax.random.PRNGKey(s))[0])(jnp.arange(n))
    hand_sweep = jax.jit(jax.vmap(blocked))  # the floor of a seed sweep: the hand-written scan, vmapped
    side = max(1, round(n**0.5))
    grid = ocokit.stack([OGD(eta=0.01 * 2.0**k, decay="inverse_sqrt") for k in range(side)])
    ready = jax.block_until_ready
    fns = {
        "hand, drawn per round": lambda: ready(per_round(env_key)),
        "hand, drawn in blocks": lambda: ready(blocked(env_key)),
        "run": lambda: ready(ocokit.run(learner, problem, T, 0, comparators=False).loss),
        "run, comparators": lambda: ready(ocokit.run(learner, problem, T, 0).loss),
        "run COLDQ": lambda: ready(ocokit.run(coldq, problem, T, 0, comparators=False).loss),
        "hand, sweep": lambda: ready(hand_sweep(env_keys)),
        "sweep": lambda: ready(ocokit.sweep(learner, problem, T, n, chunk_size=n, comparators=False).loss),
        "grid": lambda: ready(
            ocokit.sweep(grid, problem, T, side, batched_learner=True, chunk_size=n, comparators=False).loss
        ),
    }
    old = old_engine()
    if old is not None:
        fns["old run"] = lambda: ready(old.run(learner, problem, T, 0, comparators=False).loss)
        fns["old run, comparators"] = lambda: ready(old.run(learner, problem, T, 0).loss)
        solver = old_solver()

        def old_coldq():  # today's main whole: its engine and its per-round solver
            with solving_with(solver) if solver is not None else contextlib.nullcontext():
                return ready(old.run(coldq, problem, T, 0, comparators=False).loss)

        fns["old run COLDQ"] = old_coldq
    t = {name: best.wall for name, best in best_of_each(fns, args.repeats).items()}

    R = min(args.session_rounds, T)
    datas = jax.vmap(lambda s: problem.round_data(None, jax.random.fold_in(env_key, s), s))(jnp.arange(1, R + 1))
    host = [jax.tree.map(lambda a, i=i: np.asarray(a[i]), datas) for i in range(R)]

    def prebuilt(engine=ocokit.engine, learner=learner):
        """Fresh sessions, built before the timing (a Session's construction is timed on its own): one per call."""
        return iter([engine.Session(learner, problem, horizon=R, key=0) for _ in range(args.repeats + 1)])

    def stepped(engine=ocokit.engine, learner=learner):
        fresh = prebuilt(engine, learner)

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

    def parts():
        """A Session's round taken apart, each output fetched: its round program called as ``observe`` calls it but
        with each round's data already on the device, and a program that computes nothing from the same arrays (its
        output a slice of the parameters), the data on the device or from the host: what calling a program with
        these arguments costs, and what transferring the data adds, apart from the round's arithmetic."""
        session = ocokit.Session(learner, problem, horizon=R, key=0)
        params, carry, round_ = session._params, session._carry, session._round
        on_device = [jax.device_put(data) for data in host]
        nothing = jax.jit(lambda params, carry, data: (carry, params[0][:1]), keep_unused=True)

        def calls(program, datas):
            def rounds():
                c = carry
                for data in datas:
                    c, out = program(params, c, data)
                    np.asarray(out)

            return rounds

        return {
            "program, data on the device": calls(round_, on_device),
            "nothing, data on the device": calls(nothing, on_device),
            "nothing, data from the host": calls(nothing, host),
        }

    sessions = {"session": stepped(), "observe_many": burst, "dispatch": dispatches, "construction": built}
    sessions |= parts()
    before = {
        "old session": old,
        f"session {OLD_SESSION}": old_engine(OLD_SESSION),
        f"session {UNPACKED_SESSION}": old_engine(UNPACKED_SESSION),
    }
    sessions |= {name: stepped(e) for name, e in before.items() if e is not None}
    steady = old_engine(STEADY_SESSION)
    sessions["session COLDQ"] = stepped(learner=coldq)
    if steady is not None:
        sessions |= {"steady OGD": stepped(steady), "steady COLDQ": stepped(steady, coldq)}
    ts = {name: best.wall for name, best in best_of_each(sessions, args.repeats).items()}

    us = lambda seconds, rounds=T: f"{1e6 * seconds / rounds:.2f} us/round"  # noqa: E731
    print(f"problem: TimeVaryingRegression(dim=10), learner: OGD, T = {T}, device: {jax.devices()[0].platform}")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    print(f"run vs the hand-written scan (blocks):   {t['run'] / t['hand, drawn in blocks']:6.2f}x  (target <= 1.2x)")
    print(f"    run {us(t['run'])}, hand scan {us(t['hand, drawn in blocks'])} drawn in blocks, ", end="")
    print(f"{us(t['hand, drawn per round'])} drawn per round; run with comparators {us(t['run, comparators'])}")
    if old is not None:
        for label, new, was in (("OGD", "run", "old run"), ("COLDQ", "run COLDQ", "old run COLDQ")):
            print(f"{label} per round vs today's main ({OLD_ENGINE}): {t[was] / t[new]:6.2f}x faster  (target >= 3x)")
            print(f"    {us(t[new])} vs {us(t[was])} (no comparators)")
        print(f"    with comparators (OGD): {t['old run, comparators'] / t['run, comparators']:.2f}x faster")
    else:
        print(f"today's main ({OLD_ENGINE}) not found in git: no comparison with the old engine")
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
    print(f"    {us(ts['session'], R)} over {R} rounds (decide + observe, data from the host)", end="")
    olds = ("old session", OLD_ENGINE), *((f"session {c}", c) for c in (OLD_SESSION, UNPACKED_SESSION))
    for name, commit in olds:
        if name in ts:
            print(f"; {ts[name] / ts['session']:.2f}x faster than at {commit}", end="")
    print()
    if "steady OGD" in ts:
        print(
            f"    against {STEADY_SESSION} (before the carry was laid out for the rounds' types): OGD "
            f"{ts['steady OGD'] / ts['session']:.2f}x faster, COLDQ {ts['steady COLDQ'] / ts['session COLDQ']:.2f}x "
            f"({us(ts['session COLDQ'], R)} against {us(ts['steady COLDQ'], R)})"
        )
    print(
        f"    the floor of one compiled call per round (jit(x + 1) on a host array, the result fetched): "
        f"{us(ts['dispatch'], R)}, {ts['dispatch'] / R / scan_round:.1f}x the scan's round"
    )
    nothing = ts["nothing, data on the device"]
    print(
        f"    taken apart: a program that computes nothing from the round's arrays, its data on the device: "
        f"{us(nothing, R)} ({nothing / R / scan_round:.1f}x the scan's round), from the host: "
        f"{us(ts['nothing, data from the host'], R)}; the round's program, its data on the device: "
        f"{us(ts['program, data on the device'], R)}"
    )
    print(f"observe_many vs the scan:                {ts['observe_many'] / R / scan_round:6.2f}x  (target <= 1.5x)")
    print(f"    {us(ts['observe_many'], R)} ({R} rounds in one burst, compiled scan)")
    print(f"    a Session's construction (not counted above): {ts['construction'] * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
