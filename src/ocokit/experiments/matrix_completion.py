"""Wang, Wan and Zhang (AAAI 2025), section "Experiments": online matrix completion.

``matrix-completion-movielens`` (Fig. 1, full information: OFW-TVC, SCOFW-TVC, OPDP, LPM on MovieLens-100k)
and ``matrix-completion-filmtrust`` (Fig. 2, bandit: BFW-TVC, SCBFW-TVC, LBPM on FilmTrust) draw the
cumulative loss and the CCV against t on
[`ocokit.problems.OnlineMatrixCompletion`][ocokit.problems.OnlineMatrixCompletion] (``rho = 10^4``),
beside the reference line ``X = 0`` ([`ocokit.algorithms.Constant`][ocokit.algorithms.Constant]): a method *learns* when
its cumulative
loss is clearly below that line's (`LEARNS`), the first claim checked.

Reading (option ``sampling``): by default f_t sums over all of O every round, as the paper's formula states.
With one sampled entry per round (the old default, ``sampling=entry``) no method learns at any reachable
horizon: the gradients are 1-sparse, nothing generalises to unseen entries, and every method's cumulative loss
equals X = 0's. Constants (option ``constants``): measured on the data by default (``||M_O||_F``, ``P_t`` as
drawn; [`OnlineMatrixCompletion`][ocokit.problems.OnlineMatrixCompletion]), the worst-case bounds from rho as
``constants=worst_case``.

Hyperparameters: "set according to their theoretical suggestions, and we choose the best hyper-parameters from
the range [10^-5, ..., 10^5]". Every method is built by ``from_theory`` and one knob per method (`KNOBS`,
the one whose score moves over the grid) is chosen from the grid by
[`ocokit.tuning.TUNING_CRITERION`][ocokit.experiments.TUNING_CRITERION] on a
tuning seed (10000) never used for the figure (`TUNING`). ``tuning/<experiment>.json`` records each grid's
scores and choices and the command that wrote it (``ocokit tune NAME --T T``); ``tune=true`` re-runs the grid
search at run time (each grid one vmapped sweep) and ``tuned=false`` uses the theory values.

MovieLens (recorded grid at T = 300, loss relative to X = 0's): OFW-TVC's G (1.81 at 10^-3; flat from 0.1 up),
SCOFW-TVC's G (0.13 at 10^4), OPDP's eta (1.87 at its theory value); LPM's eps alone either freezes it at X = 0
or throws it to the boundary (27x), so eps and eta are tuned together (0.54 at eps = 10^-4, eta = 0.1 x theory).
The default run (T = 1000, 3 seeds, `HORIZONS`; 10 minutes on a 2-core machine, rounds of 2-98 ms) has
every method learn: 0.071 (SCOFW-TVC), 0.685 (LPM), 0.776 (OFW-TVC), 0.804 (OPDP); the full-size figure
(``--T 10000 --seeds 10``, several CPU-hours) is for a cluster (``--executor ray``).

FilmTrust: at d = m n = 3.1e6 the one-point estimate ``(d / delta) f(x + delta u) u`` of the gradient has a
signal-to-noise ratio of about 5e-5 per round at the theory smoothing radius (at most 5e-4 for any delta below
the set's inner radius), so learning needs at least 4e6 rounds: no knob makes the bandit methods learn at a
reachable horizon, and the default run (T = 200, 3 seeds, every knob at its theory value; no grid search is
recorded, ``tune=true`` runs one) measures their exploration cost. Probes on small synthetic matrices found
the knobs that move each bandit method (`KNOBS`).
"""

from __future__ import annotations

import operator
from pathlib import Path

import equinox as eqx
import numpy as np

from ocokit.algorithms import (
    BFWTVC,
    LBPM,
    LPM,
    OFWTVC,
    OPDP,
    SCBFWTVC,
    SCOFWTVC,
    AbstractLearner,
    Constant,
    ProblemInfo,
)
from ocokit.harness import Algorithm, Claim, Experiment, Option, final, register
from ocokit.problems import OnlineMatrixCompletion
from ocokit.problems._matrix_completion import CONSTANT_RULES, SAMPLINGS
from ocokit.studies import Comparison
from ocokit.tuning import TUNING_OPTIONS, Tuning, knob_values

ALPHA_F = 1.0
"""Strong-convexity modulus given to SCOFW-TVC and SCBFW-TVC (the paper does not state it: 1)."""
LEARNS = 0.9
"""A method *learns* when its final cumulative loss is at most this fraction of ``X = 0``'s."""
HORIZONS = {"matrix-completion-movielens": 1000, "matrix-completion-filmtrust": 200}
"""Default horizons (the paper gives none; module doc)."""
SEEDS = {"matrix-completion-movielens": 3, "matrix-completion-filmtrust": 3}
"""Default evaluation seeds."""
_RECONSTRUCTED = "reconstructed from the papers comparing against it (equations not checked against its own paper)"
KNOBS = {"OFW-TVC": "G", "SCOFW-TVC": "G", "OPDP": "eta", "LPM": ("eps", "eta"),
         "BFW-TVC": "M", "SCBFW-TVC": "alpha_f", "LBPM": "block_constant"}  # fmt: skip
"""The tuned knob of each method: the one whose score moves over the grid (a knob whose score is flat is the
wrong one); a tuple of knobs is tuned over the product of their grids (LPM: eps alone either freezes it at
``X = 0`` or throws it to the boundary; with eta it learns). A theory input (`THEORY_INPUTS`) is set to
the grid value itself and fed into the method's ``from_theory`` formulas: ``G`` the Lipschitz constant
(OFW-TVC's effective step is proportional to 1/G; for BFW-TVC G is inert, Theorem 3's C_2 being dominated by
its ``d M D / c`` term), ``M`` the loss bound (BFW-TVC's eta and beta scale with 1/M), ``alpha_f`` the
strong-convexity modulus (SCBFW-TVC's step scales with 1/alpha_f), ``block_constant`` LBPM's
``K_b = c_K T^{1/2}`` (its theory ``c_K = 6 n M`` clips the block to T, so the theory LBPM never updates). Any
other name is the learner's field, as a multiplier of its theory value."""
THEORY_INPUTS = {"G": ("grad_bound", "constraint_grad_bound"), "M": ("loss_bound",), "alpha_f": ("alpha_f",),
                 "block_constant": ("block_constant",)}  # fmt: skip
"""Knob -> the ``from_theory`` keywords that receive its value."""
METHODS = {
    "OFW-TVC": (OFWTVC, {}, "Alg. 1, Thm 1 parameters"),
    "SCOFW-TVC": (SCOFWTVC, {"alpha_f": ALPHA_F}, "Alg. 2, Thm 2 (proof) parameters, alpha_f = 1"),
    "OPDP": (OPDP, {}, _RECONSTRUCTED),
    "LPM": (LPM, {}, _RECONSTRUCTED),
    "BFW-TVC": (BFWTVC, {}, "Alg. 3, Thm 3 parameters"),
    "SCBFW-TVC": (SCBFWTVC, {"alpha_f": ALPHA_F}, "Alg. 4, Thm 4 (proof) parameters"),
    "LBPM": (LBPM, {}, _RECONSTRUCTED),
}
"""Label -> (learner class, ``from_theory`` keywords, note)."""
ZERO = "X = 0"
"""Label of the reference line: [`ocokit.algorithms.Constant`][ocokit.algorithms.Constant], playing ``X = 0`` (zero
CCV)."""


def zero_loss(problem: OnlineMatrixCompletion) -> float:
    """``X = 0``'s (expected) loss per round: ``||M_O||^2 / 2``, or a sample's mean share of it."""
    r = np.asarray(problem.ratings)
    return 0.5 * float(r @ r if problem.sampling == "all" else problem.batch_size * np.mean(r * r))


_FIELDS = {("LPM", "eta"): "chain.eta", ("LBPM", "eta"): "chain.eta"}
"""Knobs held by a part of the learner: (class, knob) -> the field's path."""


def scale_knob(learner: AbstractLearner, knob: str, scale: float) -> AbstractLearner:
    """``learner`` with its numeric field ``knob`` (in a part: `_FIELDS`) multiplied by ``scale``."""
    field = operator.attrgetter(_FIELDS.get((type(learner).__name__, knob), knob))
    return eqx.tree_at(field, learner, field(learner) * scale)


def build(label: str, info: ProblemInfo, value=None) -> AbstractLearner:
    """Method ``label`` by its ``from_theory``, its knobs (`KNOBS`) at ``value`` (``None``: the theory's)."""
    cls, keywords, _ = METHODS[label]
    pairs = knob_values(KNOBS[label], value)
    theory = {k: v for n, v in pairs if n in THEORY_INPUTS for k in THEORY_INPUTS[n]}
    learner = cls.from_theory(info, **(keywords | theory))
    for knob, v in pairs:
        learner = learner if knob in THEORY_INPUTS else scale_knob(learner, knob, v)
    return learner


def _describe_knob(label: str, value) -> str:
    knob = KNOBS[label]
    if value is None:
        return (
            f"{knob} at its theory value" if isinstance(knob, str) else f"{' and '.join(knob)} at their theory values"
        )
    return ", ".join(f"{k} = {v:g} " + ("in the theorem's formulas" if k in THEORY_INPUTS else "x theory")
                     for k, v in knob_values(knob, value))  # fmt: skip


def algorithms(labels, values: dict[str, float], origin: str) -> tuple[Algorithm, ...]:
    """``X = 0`` and the methods ``labels`` with their knobs at ``values[label]`` (theory when absent)."""
    out = [
        Algorithm(
            ZERO, lambda info: Constant(), "the reference: never moves; a method learns if its loss is below this one's"
        )
    ]
    for m in labels:
        value = values.get(m)
        make = lambda info, m=m, value=value: build(m, info, value)  # noqa: E731
        out.append(Algorithm(m, make, f"{METHODS[m][2]}; {_describe_knob(m, value)} ({origin})"))
    return tuple(out)


TUNING = Tuning(knobs=KNOBS, build=build, folder=Path(__file__).with_name("tuning"), unbatched=("LPM", "LBPM"),
                reference_loss=zero_loss)  # fmt: skip
"""The paper's grid search; LPM's and LBPM's LOO loops would run in lockstep in one sweep: one per value."""


def _tuned_algorithms(ctx, problem) -> tuple[Algorithm, ...]:
    labels = [a.label for a in ctx.experiment.algorithms if a.label in KNOBS]
    return algorithms(labels, *TUNING.choices(ctx, labels, problem))


def make_problem(dataset: str):
    """``make_problem(T, data_dir, options)`` of ``dataset`` (``data_dir`` or ``$OCOKIT_DATA``)."""

    def make(T, data_dir, o) -> OnlineMatrixCompletion:
        kwargs = {k: o[k] for k in ("sampling", "batch_size", "radius", "lmo_tol", "constants")}
        loader = getattr(OnlineMatrixCompletion, f"from_{dataset}")
        try:
            return loader(data_dir, **kwargs)
        except FileNotFoundError as err:
            raise FileNotFoundError(
                f"experiment 'matrix-completion-{dataset}' needs the {dataset} ratings: {err}"
            ) from err

    return make


OPTIONS = (
    *TUNING_OPTIONS,
    Option("sampling", str, "all", "observed entries per round", choices=SAMPLINGS),
    Option("constants", str, "data", "problem constants: measured on the data or worst case", choices=CONSTANT_RULES),
    Option("batch_size", int, 1, "entries per round (sampling=minibatch)", low=1),
    Option("radius", float, 1e4, "nuclear-norm radius", low=0, above=True),
    Option("lmo_tol", float, 1e-2, "relative tolerance of the warm-started Lanczos LMO", low=0, above=True),
)


def _beats(summary, winner: str, losers, metric: str) -> tuple[str, bool]:
    w, others = final(summary, winner, metric), {o: final(summary, o, metric) for o in losers}
    return f"{winner} {w:.4g} vs " + ", ".join(f"{o} {v:.4g}" for o, v in others.items()), all(
        w < v for v in others.values()
    )


def _claim_learns(labels):
    def check(summary):
        zero = final(summary, ZERO, "cumulative_loss")
        ratios = {m: final(summary, m, "cumulative_loss") / zero for m in labels}
        text = ", ".join(f"{m} {r:.3g}" for m, r in ratios.items())
        return f"cumulative loss / X = 0's: {text} (learns: <= {LEARNS:g})", all(r <= LEARNS for r in ratios.values())

    return Claim(f"every method learns: its cumulative loss is at most {LEARNS:g} of X = 0's", check)


def _claim_ofw(summary):
    (loss, a), (ccv, b) = (
        _beats(summary, "OFW-TVC", ("OPDP", "LPM"), m) for m in ("cumulative_loss", "hard_violation")
    )
    return f"loss: {loss}; CCV: {ccv}", a and b


def _claim_scofw(summary):
    losses = {k: final(summary, k, "cumulative_loss") for k in ("SCOFW-TVC", "OFW-TVC", "OPDP", "LPM")}
    lowest = min(losses, key=losses.get)
    sc, ofw = final(summary, "SCOFW-TVC", "hard_violation"), final(summary, "OFW-TVC", "hard_violation")
    text = ", ".join(f"{k} {v:.4g}" for k, v in losses.items())
    return (
        f"loss: {text} (lowest: {lowest}); CCV SCOFW-TVC {sc:.4g} vs OFW-TVC {ofw:.4g}",
        lowest == "SCOFW-TVC" and sc > ofw,
    )


def _claim_bandit(summary):
    results = [(name, *_beats(summary, ours, ("LBPM",), metric)) for ours in ("BFW-TVC", "SCBFW-TVC")
               for metric, name in (("cumulative_loss", "loss"), ("hard_violation", "CCV"))]  # fmt: skip
    return "; ".join(f"{name}: {text}" for name, text, _ in results), all(ok for *_, ok in results)


def _experiment(name, figure, title, dataset, labels, claims) -> Experiment:
    origin = f"grid search recorded in tuning/{name}.json"
    return register(Experiment(
        name=name, paper=f"000 Fig. {figure}", title=title, options=OPTIONS, claims=(_claim_learns(labels), *claims),
        needs_data=True, algorithms=algorithms(labels, TUNING.chosen(name), origin), tuning=TUNING,
        study=Comparison(make_problem=make_problem(dataset), make_algorithms=_tuned_algorithms, chunk_size=5),
        default_T=HORIZONS[name], default_seeds=SEEDS[name],
    ))  # fmt: skip


MATRIX_COMPLETION_MOVIELENS = _experiment(
    "matrix-completion-movielens", 1,
    "Online matrix completion, MovieLens-100k, full information, f_t over all of O", "movielens",
    ("OFW-TVC", "SCOFW-TVC", "OPDP", "LPM"),
    (Claim("OFW-TVC has a lower cumulative loss and a lower CCV than OPDP and LPM", _claim_ofw),
     Claim("SCOFW-TVC has the lowest cumulative loss, with a higher CCV than OFW-TVC", _claim_scofw)),
)  # fmt: skip
MATRIX_COMPLETION_FILMTRUST = _experiment(
    "matrix-completion-filmtrust", 2,
    "Online matrix completion, FilmTrust, bandit feedback, f_t over all of O", "filmtrust",
    ("BFW-TVC", "SCBFW-TVC", "LBPM"),
    (Claim("BFW-TVC and SCBFW-TVC each have a lower cumulative loss and CCV than LBPM", _claim_bandit),),
)  # fmt: skip
