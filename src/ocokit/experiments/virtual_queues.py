"""Wang, Yan and Liu (AAAI 2025; COLDQ), section 6 and Appendix L: doubly-bounded virtual queues.

One experiment per figure, every algorithm with the parameters of the paper's Tables 3-6, 20 seeds by default
(the paper states none), common random numbers: ``time-varying-regression`` (Fig. 1, T = 1000), ``online-qp``
and ``online-lp`` (Figs. 2-3, T = 5000) and ``job-scheduling`` (Fig. 4, T = 2880; real hourly prices of 10
regions from the data folder when found, else a labelled synthetic fallback). Extra references, not in the
paper's figures (``extras=false`` leaves them out): COLDQ-Expert, Yu-Neely-Wei, Sinha-Vaze and Yuan-Lamperski.
The paper tuned the baselines to "nearly the same accumulated loss"; we run the printed parameters unchanged.
"""

from __future__ import annotations

from collections.abc import Callable

from ocokit.algorithms import COLDQ, RECOO, COLDQExpert, SinhaVaze, Yi2021, Yi2023, YuanLamperski, YuNeelyWei
from ocokit.harness import ALGORITHMS, Algorithm, Claim, Experiment, Option, Summary, final, register
from ocokit.problems import JobScheduling, OnlineLinearProgram, OnlineQuadraticProgram, TimeVaryingRegression
from ocokit.problems._job_scheduling import MAY_FIRST_HOUR, PRICE_SOURCES
from ocokit.studies import Comparison

COMPARABLE = 0.10
"""Relative slack of "comparable": ``a`` is comparable to ``b`` when ``a <= b + 0.1 |b|``."""

YNW_LABEL = "Yu-Neely-Wei DPP (extra reference)"
EXPERT_LABEL = "COLDQ-Expert (extra reference)"
SINHA_VAZE_LABEL = "Sinha-Vaze (extra reference)"
YUAN_LAMPERSKI_LABEL = "Yuan-Lamperski (extra reference)"


def _versus_recoo(at_most: float, as_reduction: bool) -> Callable[[Summary], tuple[str, bool]]:
    """Claim check: COLDQ's final hard violation at most ``at_most`` x RECOO's at a comparable accumulated loss
    (the violations in words: COLDQ's reduction in percent, or their ratio)."""

    def check(summary: Summary) -> tuple[str, bool]:
        vc, vr = final(summary, "COLDQ", "hard_violation"), final(summary, "RECOO", "hard_violation")
        lc, lr = final(summary, "COLDQ", "cumulative_loss"), final(summary, "RECOO", "cumulative_loss")
        ratio = vc / vr if vr > 0 else float("nan" if as_reduction else "inf")
        how = f"{100 * (1.0 - ratio):.1f}% lower" if as_reduction else f"ratio {ratio:.3g}"
        text = f"hard violation COLDQ {vc:.4g} vs RECOO {vr:.4g} ({how}); accumulated loss "
        text += f"COLDQ {lc:.4g} vs RECOO {lr:.4g} ({100 * (lc - lr) / abs(lr):+.1f}%)"
        return text, bool(vc <= at_most * vr and lc <= lr + COMPARABLE * abs(lr))

    return check


def _claim_fig4(summary) -> tuple[str, bool]:
    cost = {k: final(summary, k, "time_average_loss") for k in ("COLDQ", "RECOO", "Yi et al. 2023")}
    jobs = {k: final(summary, k, "time_average_hard_violation") for k in cost}
    holds = True
    for other in ("RECOO", "Yi et al. 2023"):
        holds &= cost["COLDQ"] < cost[other]
        holds &= jobs["COLDQ"] <= max(jobs[other] + COMPARABLE * abs(jobs[other]), jobs[other] + 1.0)
    text = "time-averaged cost " + ", ".join(f"{k} {v:.5g}" for k, v in cost.items())
    text += "; time-averaged delayed jobs " + ", ".join(f"{k} {v:.4g}" for k, v in jobs.items())
    return text, bool(holds)


CLAIM_FIG1 = Claim("Fig. 1: COLDQ's final hard violation is at least 40% below RECOO's without sacrificing the "
                   "accumulated loss (COLDQ's final accumulated loss at most 10% above RECOO's)",
                   _versus_recoo(0.6, as_reduction=True))  # fmt: skip
CLAIM_FIXED = Claim("Figs. 2-3: COLDQ significantly reduces the hard violation compared to RECOO (COLDQ's final hard "
                    "violation at most half of RECOO's) at comparable accumulated loss (at most 10% above RECOO's)",
                    _versus_recoo(0.5, as_reduction=False))  # fmt: skip
CLAIM_FIG4 = Claim("Fig. 4: COLDQ has a lower time-averaged energy cost than RECOO and Yi et al. 2023 without "
                   "compromising service quality (its time-averaged delayed jobs at most 10% or 1 job per slot "
                   "above each of theirs)", _claim_fig4)  # fmt: skip

# The third baseline of each figure: label, class, option (its reading of the code), field, readings, note.
_CODE = "the COLDQ authors' code"
_YI2021 = ("Yi et al. 2021", Yi2021, "yi2021_gamma_rule", "gamma_rule", ("printed", "code"),
           "Alg. 1, Table {table}, gamma_rule={value}; rule from " + _CODE)  # fmt: skip
_YI2023 = ("Yi et al. 2023", Yi2023, "yi2023_dual_step", "dual_step", ("gamma", "beta"),
           "Alg. 1 (one agent), Table {table}, dual_step={value}; update rule from " + _CODE)  # fmt: skip
_RECOO = ("RECOO", RECOO, "recoo_queue", "queue_uses", ("current", "previous"),
          "Table {table}, queue_uses={value}; update rule from " + _CODE)  # fmt: skip


def _baseline(spec, table: int, options) -> Algorithm:
    label, cls, option, field, _, note = spec
    value = options[option]
    return Algorithm(label, lambda info: cls.from_paper(info, table=table, **{field: value}),
                     note.format(table=table, value=value))  # fmt: skip


_EXTRAS = (
    Algorithm(EXPERT_LABEL, lambda info: COLDQExpert.from_theory(info, eps=0.5),
              "Alg. 2 with Corollary 3 parameters (eps = 0.5); not in the paper's figure"),
    Algorithm(YNW_LABEL, YuNeelyWei.from_theory, "V = sqrt(T), alpha = T; not in the paper's figure"),
    Algorithm(SINHA_VAZE_LABEL, SinhaVaze.from_theory,
              "convex: V = 1, beta = 1/(2GD), lam = 1/(2 sqrt(T)), one queue per constraint; "
              "not in the paper's figure"),
    Algorithm(YUAN_LAMPERSKI_LABEL, YuanLamperski.from_theory,
              "beta = 1/sqrt(T), eta_p = 1/(5 N sqrt(T)) (a = 5, G = 1 of the COLDQ authors' code); "
              "not in the paper's figure"),
)  # fmt: skip


def _algorithms(table: int, third, options) -> list[Algorithm]:
    """COLDQ, RECOO and the third baseline with Table ``table``, then the extra references."""
    coldq = Algorithm("COLDQ", lambda info: COLDQ.from_paper(info, table=table),
                      f"Table {table}: alpha_t = sqrt(t), gamma = 0.5 T, eta = 1/T")  # fmt: skip
    return [coldq, *(_baseline(s, table, options) for s in (_RECOO, third)), *(_EXTRAS if options["extras"] else ())]


def job_problem(T: int, data_dir, o) -> JobScheduling:
    """Fig. 4's problem with the prices of the options (``auto``: real prices; synthetic without a data location)."""
    return JobScheduling.from_source(
        o["prices"], T, path=data_dir, start_hour=o["start_hour"], nyiso_path=o["nyiso_path"]
    )


_JOB_OPTIONS = (
    Option("prices", str, "auto", "price source", choices=PRICE_SOURCES),
    Option("nyiso_path", str, None, "a NYISO 5-minute LBMP export (prices=nyiso)"),
    Option("start_hour", int, MAY_FIRST_HOUR, "first hour of the price window (May 1)", low=0, high=8759),
)


def _figure(name, figure, title, make_problem, table, third, claim, default_T, extra=(), **comparison):
    """Register 003 Fig. ``figure``: Table ``table``'s COLDQ, RECOO and ``third``
    ([`Comparison`][ocokit.experiments.Comparison] keywords)."""
    readings = (Option(s[2], str, s[4][0], f"{s[0]}'s reading", choices=s[4]) for s in (_RECOO, third))
    opts = (ALGORITHMS, Option("extras", bool, True, "run the extra references"), *readings, *extra)
    make_algorithms = lambda ctx, problem: _algorithms(table, third, ctx.options)  # noqa: E731
    return register(Experiment(
        name=name, paper=f"003 Fig. {figure}", title=title, options=opts, claims=(claim,), default_T=default_T,
        study=Comparison(make_problem=make_problem, make_algorithms=make_algorithms, **comparison), default_seeds=20,
        algorithms=_algorithms(table, third, {o.name: o.default for o in opts}),
    ))  # fmt: skip


TIME_VARYING_REGRESSION = _figure(
    "time-varying-regression", 1, "Time-varying regression, time-varying linear constraints",
    lambda T, data_dir, options: TimeVaryingRegression(), 3, _YI2023, CLAIM_FIG1, 1000,
)  # fmt: skip
ONLINE_QP = _figure(
    "online-qp", 2, "Online quadratic programming, fixed constraints",
    lambda T, data_dir, options: OnlineQuadraticProgram(), 4, _YI2021, CLAIM_FIXED, 5000, logy=("hard_violation",),
)  # fmt: skip
ONLINE_LP = _figure(
    "online-lp", 3, "Online linear programming, fixed constraints",
    lambda T, data_dir, options: OnlineLinearProgram(), 5, _YI2021, CLAIM_FIXED, 5000, logy=("hard_violation",),
)  # fmt: skip
JOB_SCHEDULING = _figure(
    "job-scheduling", 4, "Online job scheduling across 100 data centres", job_problem, 6, _YI2023, CLAIM_FIG4,
    2880, panels=("time_average_loss", "time_average_hard_violation"), logy=("time_average_hard_violation",),
    extra=_JOB_OPTIONS, describe=lambda p: {"class": type(p).__name__, "price_source": p.price_source},
)  # fmt: skip
