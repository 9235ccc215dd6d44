"""Projection-free benchmark at MovieLens size (943 x 1682): warm LMO vs SVD, OFW-TVC vs projected OGD.

Run by hand: ``python benchmarks/projection_free.py [--lmo-steps 40] [--T 40] [--repeats 3]``. Prints ratios
measured in this process (compilation excluded: every timed function is called once first); absolute times
appear only beside them. Targets (issue 4):

1. ``NuclearNormBall.warm_lmo`` on a slowly varying gradient sequence (as in an OFW run) at least 20x faster
   than a full SVD per call, with ``<G, V>`` agreeing with ``-radius sigma_1(G)`` to 1e-6 relative;
2. OFW-TVC's time per round against projected OGD's (exact projection by full SVD every round), both on
   :class:`ocokit.problems.OnlineMatrixCompletion`;
3. OFW-TVC's time per round against one elementwise pass over the m x n matrix (``X * a + b``, jitted):
   the elementwise passes per round, estimated as round time / pass time (issue 14: <= 12), and
   the share of the round spent drawing ``P_t`` (issue 14: <= 20%; timed alone, drawn and summed once).
   The pass is timed from memory, as the round meets its matrices (a round reads and writes several m x n
   float64 matrices, more than a CPU's last-level cache holds): each call reads a different one of
   :data:`PASS_BUFFERS` matrices. The pass on a matrix already in cache is printed beside it;
4. against the main before the fast matrix rounds (``OLD``: its ``NuclearNormBall`` loaded from git into this
   process, and its threefry draw of ``P_t``, pinned below): OFW-TVC's round, the draw of ``P_t`` and the warm LMO call,
   old time / new time;
5. the warm LMO against its floor, a warm NumPy power iteration on ``G^T G`` stopped by the LMO's own rule
   (``||A v - theta v|| <= tol theta``, tol = 1e-6; written below, :func:`numpy_power`), both timed in this process
   on two sequences of 943 x 1682 directions: (1)'s and the directions OFW-TVC's LMO meets on MovieLens (recorded
   from a run). Printed: time per call, LMO time / NumPy time (issue 45: <= 1.5), matrix products and measured
   elementwise passes per call, and the largest relative error of each against a full SVD. The NumPy iteration
   stopped instead at a relative change of sigma below tol (the issue's reference, sigma carried from call to call)
   is printed beside it with its own error.

Every program is compiled with XLA's defaults (the library sets no XLA options).

The ratings are MovieLens-100k when found (``--data`` or ``OCOKIT_DATA`` or ``../shared/data``), else a
synthetic low-rank matrix of the same size and density.
"""

from __future__ import annotations

import argparse
import os
import time
import types
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)

import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import ocokit  # noqa: E402
from _git import module_at  # noqa: E402
from _timing import best_of, best_of_each  # noqa: E402
from ocokit.algorithms import OFWTVC, OGD, ProblemInfo  # noqa: E402
from ocokit.problems import OnlineMatrixCompletion, synthetic_low_rank_ratings  # noqa: E402
from ocokit.sets import AbstractSet, NuclearNormBall  # noqa: E402

M, N = 943, 1682
PASS_BUFFERS = 8
"""Distinct m x n float64 matrices the timed pass cycles through (8 x 12.7 MB, beyond a 32 MiB cache)."""
OLD = "6df185a"
"""The main before the fast matrix rounds (issue 14): its ``src/ocokit/sets/_nuclear.py`` is the old LMO."""


def old_nuclear() -> types.ModuleType | None:
    """``ocokit.sets._nuclear`` as of :data:`OLD` (from this checkout's git), or ``None`` if unavailable."""
    return module_at(OLD, "src/ocokit/sets/_nuclear.py", "ocokit_old_nuclear")


class ThreefryDraw(OnlineMatrixCompletion):
    """The problem with :data:`OLD`'s draw of ``P_t``: threefry uniform float32 numbers, cast (pinned here)."""

    def round_data(self, episode, key, t):
        k_entries, k_p = jax.random.split(key)
        PT = jax.random.uniform(k_p, self.shape, jnp.float32, minval=-1.0, maxval=1.0).astype(self.ratings.dtype)
        data = {"PT": PT}
        if self.sampling != "all":
            data["index"] = jax.random.randint(k_entries, (self.batch_size,), 0, self.ratings.shape[0])
        return data


def old_problem(rat, problem: OnlineMatrixCompletion, old: types.ModuleType) -> OnlineMatrixCompletion:
    """``problem`` as :data:`OLD` ran it: the threefry draw and the old ``NuclearNormBall``."""
    kwargs = {"radius": problem.rho, "sampling": problem.sampling, "batch_size": problem.batch_size}
    ball = old.NuclearNormBall(problem.shape, problem.rho)
    return eqx.tree_at(lambda p: p.domain, ThreefryDraw(rat, **kwargs), ball)


def fmt(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms" if seconds < 1 else f"{seconds:.2f} s"


def data_root(data: str | None) -> Path:
    return Path(data or os.environ.get("OCOKIT_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


def ratings(data: str | None):
    root = data_root(data)
    try:
        return ocokit.datasets.load_movielens(root), "MovieLens-100k"
    except (OSError, ValueError):
        return synthetic_low_rank_ratings(M, N, rank=10, step=1.0, seed=0), "synthetic 943 x 1682 (no data)"


def gradient_sequence(steps: int, seed: int = 0) -> np.ndarray:
    """Directions ``c_t = eta S_t + 2 (X_t - X_1)`` of an OFW-like run: a rank-10 signal plus small changes.

    Each step adds one sampled-entry gradient and a dense ``[-1, 1]`` constraint gradient scaled by 1e-3
    (a slowly varying sequence: consecutive top singular vectors are close, as in OFW on matrix completion).
    """
    rng = np.random.default_rng(seed)
    base = rng.standard_normal((M, 10)) @ rng.standard_normal((10, N)) / np.sqrt(10)
    out, S = [], base.copy()
    for _ in range(steps):
        i, j = rng.integers(M), rng.integers(N)
        S[i, j] += rng.normal()
        S += 1e-3 * rng.uniform(-1.0, 1.0, (M, N))
        out.append(S.copy())
    return np.stack(out)


def warm_run_of(K, value: bool, v0=None):
    """A jitted scan of warm LMO calls over a stack of directions: ``(<G, V>, steps)`` per call when ``value``,
    else ``(V_00 + V_mn, steps)``, which reads no more of V than two entries (the timed form: no pass of its own).

    The first call starts cold, or from the unit vector ``v0``."""
    init = K.lmo_init() if v0 is None else eqx.tree_at(lambda s: s.v, K.lmo_init(), jnp.asarray(v0))

    @jax.jit
    def warm_run(Gs):
        def body(state, G):
            V, state = K.warm_lmo(G, state)
            out = jnp.vdot(G, V) if value else V[0, 0] + V[-1, -1]
            return state, (out, K.lmo_calls(state))

        _, out = jax.lax.scan(body, init, Gs)
        return out

    return warm_run


def lmo_vs_svd(steps: int, repeats: int, old: types.ModuleType | None) -> None:
    Gs = jnp.asarray(gradient_sequence(steps + 1))
    K = NuclearNormBall((M, N), radius=1e4)
    values, iters = warm_run_of(K, value=True)(Gs)
    warm_run = warm_run_of(K, value=False)
    fns = {"new": lambda: jax.block_until_ready(warm_run(Gs))}
    if old is not None:
        old_run = warm_run_of(old.NuclearNormBall((M, N), radius=1e4), value=False)
        fns["old"] = lambda: jax.block_until_ready(old_run(Gs))
    t = {name: best.wall for name, best in best_of_each(fns, repeats).items()}
    warm = t["new"] / (steps + 1)
    # one SVD per call, as an exact LMO would need (the top pair from a full SVD of G)
    svd_times, exact = [], []
    for G in np.asarray(Gs[:: max(1, (steps + 1) // 3)]):
        tic = time.perf_counter()
        s = np.linalg.svd(G, full_matrices=False)[1]  # with U and V^T, as an exact LMO needs
        svd_times.append(time.perf_counter() - tic)
        exact.append(-1e4 * s[0])
    svd = min(svd_times)
    picked = np.asarray(values)[:: max(1, (steps + 1) // 3)]
    rel = np.max(np.abs(picked - np.array(exact)) / np.abs(np.array(exact)))
    print(f"(1) warm-started nuclear-norm LMO vs full SVD, {M} x {N}, {steps + 1} slowly varying directions")
    print(f"    speed-up per call: {svd / warm:.1f}x  (target >= 20x)   [warm {fmt(warm)}, SVD {fmt(svd)}]")
    print(
        f"    Lanczos steps per call after the first: mean {np.mean(np.asarray(iters)[1:]):.1f}, "
        f"first (cold) {int(iters[0])}"
    )
    print(f"    max relative error of <G, V> vs -radius sigma_1(G): {rel:.1e}  (target <= 1e-6)")
    if old is not None:
        old_call = t["old"] / (steps + 1)
        print(
            f"    vs {OLD} (before the fast matrix rounds): {old_call / warm:.2f}x faster per call   "
            f"[old {fmt(old_call)}]"
        )


def run_of(learner, problem, T: int):
    """One timed run: ``T`` rounds of ``learner`` on ``problem`` (no comparators), blocked on."""
    return lambda: ocokit.run(learner, problem, T, 0, comparators=False).loss.block_until_ready()


def ofw_tvc_vs_ogd_and_floor(data: str | None, T: int, T_ogd: int, repeats: int, old) -> None:
    rat, source = ratings(data)
    problem = OnlineMatrixCompletion(rat, radius=1e4)
    learner = OFWTVC.from_theory(ProblemInfo.of(problem, T))
    Xs = [jnp.asarray(np.random.default_rng(i).standard_normal((M, N))) for i in range(PASS_BUFFERS)]
    axpb = jax.jit(lambda X, a, b: X * a + b)
    turn = iter(range(10**9))
    fns = {
        "pass": lambda: axpb(Xs[next(turn) % PASS_BUFFERS], 1.0001, 0.5).block_until_ready(),
        "cached pass": lambda: axpb(Xs[0], 1.0001, 0.5).block_until_ready(),
        "tvc": run_of(learner, problem, T),
        "tvc 2T": run_of(learner, problem, 2 * T),
        "draw": draw_only(problem, T),
    }
    if old is not None:
        before = old_problem(rat, problem, old)
        fns |= {"old tvc": run_of(learner, before, T), "old tvc 2T": run_of(learner, before, 2 * T)}
        fns |= {"old draw": draw_only(before, T)}
    t = {name: best.wall for name, best in best_of_each(fns, repeats, inner={"pass": 20, "cached pass": 20}).items()}
    # a round in steady state: rounds T + 1..2T (the run's fixed cost and its cold first LMO call cancel)
    floor, tvc, draw = t["pass"], (t["tvc 2T"] - t["tvc"]) / T, t["draw"] / T
    ogd = best_of(run_of(OGD(eta=1.0), problem, T_ogd), max(1, repeats - 1)).wall / T_ogd
    print(f"(2) OFW-TVC vs projected OGD (full SVD projection each round), OnlineMatrixCompletion on {source}")
    print(f"    (sampling={problem.sampling!r}, the problem's default)")
    print(f"    OGD / OFW-TVC time per round: {ogd / tvc:.1f}x   [OFW-TVC {fmt(tvc)}, OGD {fmt(ogd)} per round]")
    print(f"    (OFW-TVC's round in steady state: rounds {T + 1}..{2 * T} of a {2 * T}-round run; over all ", end="")
    print(f"rounds of a {T}-round run, first LMO call cold and the call's fixed cost included: {fmt(t['tvc'] / T)})")
    print(
        f"(3) OFW-TVC elementwise passes per round (estimated: round time / the time of one pass X * a + b over "
        f"{M} x {N} float64): {tvc / floor:.1f}  (target <= 12)   [pass {fmt(floor)}, round {fmt(tvc)}]"
    )
    print(f"    against a pass over a matrix already in cache ({fmt(t['cached pass'])}): {tvc / t['cached pass']:.1f}")
    print(
        f"    drawing P_t (timed alone: drawn and summed once): {draw / tvc:.0%} of OFW-TVC's round, "
        f"{draw / floor:.1f} passes  (target <= 20%)   [{fmt(draw)} per round]"
    )
    if old is not None:
        old_tvc, old_draw = (t["old tvc 2T"] - t["old tvc"]) / T, t["old draw"] / T
        print(f"(4) vs {OLD} (before the fast matrix rounds: threefry P_t, its LMO), in this process:")
        print(
            f"    OFW-TVC round {old_tvc / tvc:.2f}x faster ({old_tvc / floor:.1f} -> {tvc / floor:.1f} passes); "
            f"drawing P_t {old_draw / draw:.1f}x faster ({old_draw / floor:.1f} -> {draw / floor:.1f} passes; "
            f"{old_draw / old_tvc:.0%} -> {draw / tvc:.0%} of the round)"
        )
    else:
        print(f"(4) {OLD} not found in git: no comparison")


def draw_only(problem, T: int):
    """One timed call drawing T rounds' data (what every learner's run pays before it acts), each summed once."""
    key = jax.random.PRNGKey(0)

    @jax.jit
    def draw_all(key):
        def body(acc, t):
            data = problem.round_data(problem.episode(key, T), jax.random.fold_in(key, t), t)
            return acc + sum(jnp.sum(leaf) for leaf in jax.tree.leaves(data)), None

        return jax.lax.scan(body, 0.0, jnp.arange(1, T + 1))[0]

    return lambda: draw_all(key).block_until_ready()


TOL = 1e-6
"""The LMO's default tolerance, asked of the LMO and of its NumPy floor in (5)."""


def numpy_power(Gs: np.ndarray, v: np.ndarray, tol: float = TOL) -> tuple[list[float], list[int]]:
    """A warm power iteration on ``A = G^T G`` per direction, stopped by the LMO's residual rule (the floor of (5)).

    Each iteration is two passes, ``y = G v`` and ``w = y^T G = A v``; with ``theta = ||y||^2`` it stops once
    ``||w - theta v|| <= tol theta`` (so ``theta`` is within a relative tol of ``sigma_1^2``), else ``v = w / ||w||``.
    The next direction starts from the last v. Returns ``||G v||`` (``-<G, V> / radius``) and the iterations.
    """
    sigmas, iters = [], []
    for G in Gs:
        count = 0
        while True:
            y = G @ v
            theta = y @ y
            w = y @ G
            count += 1
            if np.linalg.norm(w - theta * v) <= tol * theta or count >= 10_000:
                break
            v = w / np.linalg.norm(w)
        sigmas.append(float(np.sqrt(theta)))
        iters.append(count)
    return sigmas, iters


def numpy_power_change(Gs: np.ndarray, v: np.ndarray, tol: float = TOL) -> tuple[list[float], list[int]]:
    """The issue's reference: a warm power iteration stopped once ``sigma = ||G v||`` changes by at most tol
    (relative) from the last estimate, which is carried from call to call; no accuracy is checked.

    Returns ``sigma`` and the passes over G per call (``G v`` each iteration, ``y^T G`` unless it stops).
    """
    sigmas, passes, sigma_prev = [], [], float(np.linalg.norm(Gs[0] @ v))
    for G in Gs:
        count = 0
        while True:
            y = G @ v
            sigma = float(np.linalg.norm(y))
            count += 1
            if abs(sigma - sigma_prev) <= tol * sigma or count > 20_000:
                break
            w = y @ G
            count += 1
            v, sigma_prev = w / np.linalg.norm(w), sigma
        sigma_prev = sigma
        sigmas.append(sigma)
        passes.append(count)
    return sigmas, passes


class Recorded(AbstractSet):
    """A set that plays ``inner`` and keeps the last LMO direction in its LMO state (to replay what a learner asked)."""

    inner: NuclearNormBall

    @property
    def shape(self):
        return self.inner.shape

    def lmo(self, direction):
        return self.inner.lmo(direction)

    def lmo_init(self):
        return self.inner.lmo_init(), jnp.zeros(self.shape)

    def warm_lmo(self, direction, state):
        vertex, inner = self.inner.warm_lmo(direction, state[0])
        return vertex, (inner, direction)

    def lmo_calls(self, state):
        return self.inner.lmo_calls(state[0])

    def project(self, x):
        return self.inner.project(x)

    def contains(self, x, atol=1e-8):
        return self.inner.contains(x, atol)

    @property
    def diameter(self):
        return self.inner.diameter

    @property
    def inner_radius(self):
        return self.inner.inner_radius

    def center(self):
        return self.inner.center()

    def scaled(self, s):
        return Recorded(self.inner.scaled(s))


def ofw_tvc_directions(data: str | None, T: int) -> tuple[np.ndarray, str]:
    """The T directions OFW-TVC's LMO is asked on ``OnlineMatrixCompletion`` (radius 1e4, the problem's default
    sampling), recorded by playing the learner round by round on the problem's data."""
    rat, source = ratings(data)
    problem = OnlineMatrixCompletion(rat, radius=1e4)
    problem = eqx.tree_at(lambda p: p.domain, problem, Recorded(problem.domain))
    learner = OFWTVC.from_theory(ProblemInfo.of(problem, T))
    key = jax.random.PRNGKey(0)
    state = learner.init(ProblemInfo.of(problem, T), key)
    episode = problem.episode(key, T)

    @jax.jit
    def round_(state, t):
        x = learner.decide(state)
        feedback = ocokit.feedback.FullInformation(problem, problem.round_data(episode, jax.random.fold_in(key, t), t))
        state = learner.update(state, x, feedback)
        return state, state.player.lmo_state[1]

    out = []
    for t in range(1, T + 1):
        state, direction = round_(state, t)
        out.append(np.asarray(direction))
    return np.stack(out), f"OFW-TVC on {source}"


def lmo_vs_power(data: str | None, steps: int, repeats: int) -> None:
    """(5): the warm LMO against a warm NumPy power iteration at the same tolerance, on two direction sequences."""
    Xs = [jnp.asarray(np.random.default_rng(i).standard_normal((M, N))) for i in range(PASS_BUFFERS)]
    axpb = jax.jit(lambda X, a, b: X * a + b)
    turn = iter(range(10**9))
    one_pass = lambda: axpb(Xs[next(turn) % PASS_BUFFERS], 1.0001, 0.5).block_until_ready()  # noqa: E731
    recorded, source = ofw_tvc_directions(data, steps + 1)
    sequences = {"(1)'s slowly varying directions": gradient_sequence(steps + 1), f"{source}": recorded}
    K = NuclearNormBall((M, N), radius=1e4, tol=TOL)
    print(f"(5) warm LMO vs a warm NumPy power iteration (its floor) at tol = {TOL:g}; {steps} calls, each from")
    print("    the last call's vector, the first from the top right singular vector of the sequence's first direction")
    for name, sequence in sequences.items():
        v0 = np.linalg.svd(sequence[0], full_matrices=False)[2][0]
        Gn = sequence[1:]
        Gs = jnp.asarray(Gn)
        values, iters = (np.asarray(a) for a in warm_run_of(K, value=True, v0=v0)(Gs))
        warm_run = warm_run_of(K, value=False, v0=v0)
        fns = {
            "lmo": lambda warm_run=warm_run, Gs=Gs: jax.block_until_ready(warm_run(Gs)),
            "numpy": lambda Gn=Gn, v0=v0: numpy_power(Gn, v0),
            "pass": one_pass,
        }
        t = {key: best.wall for key, best in best_of_each(fns, repeats, inner={"pass": 20}).items()}
        sigmas, np_iters = numpy_power(Gn, v0)
        change_sigmas, change_passes = numpy_power_change(Gn, v0)
        exact = np.array([np.linalg.svd(G, compute_uv=False)[0] for G in Gn])
        lmo_call, np_call = t["lmo"] / steps, t["numpy"] / steps
        err = np.max(np.abs(-values / 1e4 - exact) / exact)
        np_err = np.max(np.abs(np.array(sigmas) - exact) / exact)
        change_err = np.max(np.abs(np.array(change_sigmas) - exact) / exact)
        print(f"    on {name}:")
        print(
            f"      warm LMO / NumPy power iteration per call: {lmo_call / np_call:.2f}x  (target <= 1.5)   "
            f"[LMO {fmt(lmo_call)}, NumPy {fmt(np_call)}; pass {fmt(t['pass'])}]"
        )
        print(
            f"      LMO: {2 * iters.mean():.1f} products with G per call ({iters.mean():.2f} steps), "
            f"{lmo_call / t['pass']:.1f} elementwise passes; max rel. error {err:.1e}"
        )
        print(
            f"      NumPy: {2 * np.mean(np_iters):.1f} products per call ({np.mean(np_iters):.2f} iterations), "
            f"{np_call / t['pass']:.1f} passes; max rel. error {np_err:.1e}"
        )
        print(
            f"      NumPy stopped at a {TOL:g} change of sigma instead: {np.mean(change_passes):.1f} products per "
            f"call, max rel. error {change_err:.1e}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lmo-steps", type=int, default=40, help="warm LMO calls timed in one scan")
    parser.add_argument("--T", type=int, default=40, help="rounds of OFW-TVC per timed run (and 2T: steady state)")
    parser.add_argument("--T-ogd", type=int, default=3, help="rounds of OGD per timed run (one SVD each)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only-lmo", action="store_true", help="run (5) only")
    parser.add_argument("--data", default=None, help="folder holding ml-100k/u.data")
    args = parser.parse_args()
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}, float64")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    old = old_nuclear()
    if not args.only_lmo:
        lmo_vs_svd(args.lmo_steps, args.repeats, old)
        ofw_tvc_vs_ogd_and_floor(args.data, args.T, args.T_ogd, args.repeats, old)
    lmo_vs_power(args.data, args.lmo_steps, args.repeats)


if __name__ == "__main__":
    main()
