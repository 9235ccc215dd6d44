"""Regenerate the golden trajectories and experiment summaries pinned by ``tests/test_golden.py``.

Run from the repository root, only when a change is *meant* to move numbers (say why in the commit)::

    python -m tests.golden.generate

They are generated, and compared, under the library's own compile options (XLA's defaults), as users run it.

Learners: every case of the learner suite (``tests/learner_cases.py``) played for ``T = 30`` rounds on seed 3
(checked by the learner suite, on its own seed-3 run),
with its losses, constraint values, diagnostics and decisions (a decision with more than 64 entries is stored
as its inner products with four fixed Gaussian vectors); for a learner whose trajectories are chaotic
(:data:`CHAOTIC`), the summary statistics of :data:`STAT_SEEDS` seeds instead. Experiments: each registered
experiment at a small size (``EXPERIMENTS``), its summary's numbers without wall times. Written as JSON (floats
round-trip exactly).
"""

from __future__ import annotations

import json
import math
import sys
import tempfile
from pathlib import Path

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_rank_promotion", "raise")

HERE = Path(__file__).resolve().parent
T, SEED = 30, 3
TOL = 1e-12
"""Relative tolerance (of each array's scale) of a golden trajectory or summary: compiled otherwise (other XLA
options), every learner's trajectory moved by at most 2e-15 and every experiment's numbers by at most 3e-14 of their
scale, except those below."""
TOLERANCES = {
    # learner class or experiment: (tolerance, why)
    "BFWTVC": (None, "chaotic: one float32 ulp of a sphere direction moves its trajectory by 1e-8 (CHAOTIC)"),
    "SCBFWTVC": (None, "chaotic: one float32 ulp of a sphere direction moves its trajectory by 1.5e-7 (CHAOTIC)"),
    "matrix-completion-movielens": (
        1e-9,
        "OFW-TVC's warm LMO stops at its tolerance (lmo_tol = 1e-6 on <G, V>): its vertex carries about 1e-3",
    ),
    "matrix-completion-filmtrust": (1e-1, "BFW-TVC and SCBFW-TVC are chaotic: their 2-seed summaries moved by 1.6e-2"),
}
CHAOTIC = ("BFWTVC", "SCBFWTVC")
"""Learners whose trajectories amplify one-ulp differences: pinned by :func:`statistics` over :data:`STAT_SEEDS` and
by the suite's invariants (decisions in K, state shapes), not by their trajectories."""
STAT_SEEDS = (3, 4, 5, 6, 7, 8, 9, 10)
STAT_TOL = 1e-3
"""Relative tolerance of a chaotic learner's statistics: a one-ulp change moves one trajectory by at most 1.5e-7 of
its scale and the FilmTrust experiment's summaries, on another instruction set, by 1e-3."""
PROBES = 4
# (name, T, seeds, options, data): data is "small" for the generated ratings files of the paper-000 tests.
EXPERIMENTS = [
    ("time-varying-regression", 20, 2, {"extras": "false"}, None),
    ("online-qp", 20, 2, {"extras": "false"}, None),
    ("online-lp", 20, 2, {"extras": "false"}, None),
    ("job-scheduling", 24, 2, {"extras": "false", "prices": "synthetic"}, None),
    ("gradual-variation", 16, 2, {"horizons": "3", "ratio": "2", "algorithms": "MirrorProx", "drifts": "0,1"}, None),
    (
        "simplex-mirror-prox",
        16,
        2,
        {"horizons": "3", "ratio": "2", "algorithms": "SimplexMirrorProx", "dim": "4", "dims": "4,5,6"},
        None,
    ),
    ("strongly-convex-sets", 64, 2, {"dim": "3", "points": "3", "settings": "l2-quadratic"}, None),
    (
        "memory-predictions-horizon",
        5,
        8,
        {"laws": "truncated_gaussian", "points": "two_point", "literal_seeds": "2"},
        None,
    ),
    (
        "memory-predictions-window",
        8,
        4,
        {"laws": "truncated_gaussian", "points": "one_point", "windows": "2", "literal_seeds": "2"},
        None,
    ),
    ("matrix-completion-movielens", 5, 2, {}, "small"),
    ("matrix-completion-filmtrust", 8, 2, {}, "small"),
]


def probes(size: int) -> np.ndarray:
    """Four fixed Gaussian vectors of ``size`` entries (the projections that pin a large decision)."""
    return np.random.default_rng(0).standard_normal((PROBES, size))


def record(traj, index: int | None = None) -> dict:
    """What pins one case: per-round losses, constraints, diagnostics and (projected) decisions of ``traj``
    (of run ``index`` of a batched trajectory)."""
    pick = (lambda a: np.asarray(a)) if index is None else (lambda a: np.asarray(a)[index])
    decisions = pick(traj.decisions).reshape(T, -1)
    if decisions.shape[1] > 64:
        decisions = decisions @ probes(decisions.shape[1]).T
    return {
        "loss": pick(traj.loss).tolist(),
        "constraints": pick(traj.constraints).tolist(),
        "decisions": decisions.tolist(),
        "diagnostics": {k: pick(v).astype(float).tolist() for k, v in sorted(traj.diagnostics.items())},
    }


def statistics(traj) -> dict:
    """A chaotic learner's pin: over the seeds of ``traj`` (leading axis), the mean and standard deviation of the
    total loss, the total positive constraint violation and the final decision's norm."""
    loss = np.asarray(traj.loss).sum(axis=-1)
    violation = np.maximum(np.asarray(traj.constraints), 0.0).sum(axis=(-1, -2))
    final = np.asarray(traj.decisions)[:, -1].reshape(loss.shape[0], -1)
    values = {"loss": loss, "violation": violation, "final_norm": np.linalg.norm(final, axis=-1)}
    return {k: {"mean": float(np.mean(v)), "std": float(np.std(v))} for k, v in values.items()}


def learner_record(learner, problem) -> dict:
    """The record of ``learner`` playing ``problem`` for ``T`` rounds on seed ``SEED`` (a chaotic learner: its
    statistics over :data:`STAT_SEEDS`)."""
    import ocokit

    if type(learner).__name__ in CHAOTIC:
        runs = ocokit.sweep(learner, problem, T, list(STAT_SEEDS), record_decisions=True, comparators=False)
        return {"statistics": statistics(runs)}
    return record(ocokit.run(learner, problem, T, SEED, record_decisions=True, comparators=False, throw=False))


def tolerance(name: str) -> float:
    """The relative tolerance of the golden values of learner class or experiment ``name`` (:data:`TOLERANCES`)."""
    return TOLERANCES.get(name, (TOL, ""))[0] or STAT_TOL


def _close(got, want, where: str, tol: float) -> None:
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    assert got.shape == want.shape, f"{where}: shape {got.shape} != golden {want.shape}"
    scale = 1.0 + (np.nanmax(np.abs(want)) if want.size and np.isfinite(want).any() else 0.0)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale, err_msg=where, equal_nan=True)


def compare(got, want, where: str, tol: float = TOL) -> None:
    """Assert that ``got`` equals the golden ``want``: numbers to ``tol`` of each array's scale, text exactly."""
    if isinstance(want, dict):
        assert set(got) == set(want), f"{where}: keys {sorted(got)} != golden {sorted(want)}"
        for k in want:
            compare(got[k], want[k], f"{where}.{k}", tol)
    elif isinstance(want, list) and want and all(isinstance(v, dict | str) for v in want):
        assert len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            compare(g, w, f"{where}[{i}]", tol)
    elif isinstance(want, float | int | list) and not isinstance(want, bool):
        _close(got, want, where, tol)
    else:
        assert got == want, f"{where}: {got!r} != golden {want!r}"


def golden(kind: str) -> dict:
    """The stored golden values, ``kind`` in ``("learners", "experiments")``."""
    return json.loads((HERE / f"{kind}.json").read_text())


def small_data(folder: Path) -> Path:
    """The generated ratings files of ``tests/experiments/test_paper000.py``."""
    from ocokit.problems import synthetic_low_rank_ratings
    from tests.problems.test_matrix_completion import write_ratings

    write_ratings(folder, synthetic_low_rank_ratings(12, 10, n_obs=40, step=1.0, seed=5), "movielens")
    ft = synthetic_low_rank_ratings(11, 9, n_obs=30, low=0.5, high=4.0, step=0.5, seed=6)
    write_ratings(folder, ft, "filmtrust")
    return folder


def numbers(tree):
    """The summary without wall times and prose notes (the numbers a refactor must keep)."""
    if isinstance(tree, dict):
        return {k: numbers(v) for k, v in tree.items() if "seconds" not in k and k not in ("wall_time", "note")}
    if isinstance(tree, list):
        return [numbers(v) for v in tree]
    if isinstance(tree, float) and not math.isfinite(tree):
        return repr(tree)
    return tree


def experiment_summary(name, T_, seeds, options, data, folder: Path | None = None) -> dict:
    """The numbers of ``name``'s summary at this size (its files are kept under ``folder`` when given)."""
    from ocokit import experiments

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) if folder is None else Path(folder)
        data_dir = small_data(root / "data") if data == "small" else None
        out = root / "out"
        experiments.get(name).run(T=T_, seeds=seeds, out=out, data_dir=data_dir, options=options)
        summary = json.loads((out / "summary.json").read_text())
    return numbers(summary["algorithms"])


def main() -> None:
    sys.path.insert(0, str(HERE.parents[1]))
    from tests.learner_cases import cases

    which = sys.argv[1:] or ["learners", "experiments"]
    if "learners" in which:
        out = {case_id: learner_record(learner, problem) for case_id, learner, problem in cases()}
        (HERE / "learners.json").write_text(json.dumps(out, indent=None, sort_keys=True))
    if "experiments" in which:
        out = {name: experiment_summary(name, *rest) for name, *rest in EXPERIMENTS}
        (HERE / "experiments.json").write_text(json.dumps(out, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
