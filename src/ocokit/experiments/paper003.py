"""Experiments of paper 003 (COLDQ, Wang, Yan and Liu, AAAI 2025), section 6 and Appendix L."""

from __future__ import annotations

from ocokit.algorithms import OGD
from ocokit.experiments._base import Algorithm, StandardExperiment, register
from ocokit.problems import TimeVaryingRegression

TIME_VARYING_REGRESSION = register(
    StandardExperiment(
        name="time-varying-regression",
        paper="003 Fig. 1",
        title="Time-varying regression with time-varying linear constraints",
        make_problem=lambda T, data_dir, options: TimeVaryingRegression(),
        algorithms=(
            Algorithm("OGD", lambda info: OGD(eta=0.01, decay="inverse_sqrt"), "ignores the constraints"),
        ),
        default_T=1000,
        default_seeds=20,
    )
)
