"""The experiment registry: importing this package registers every experiment (one module per paper subject)."""

from ocokit.experiments import matrix_completion as matrix_completion
from ocokit.experiments import memory_predictions as memory_predictions
from ocokit.experiments import memory_predictions_horizon as memory_predictions_horizon
from ocokit.experiments import memory_predictions_window as memory_predictions_window
from ocokit.experiments import mirror_prox as mirror_prox
from ocokit.experiments import simplex_mirror_prox as simplex_mirror_prox
from ocokit.experiments import strongly_convex_sets as strongly_convex_sets
from ocokit.experiments import virtual_queues as virtual_queues
from ocokit.harness import (
    Algorithm,
    Claim,
    ClaimResult,
    Experiment,
    Figure,
    Option,
    Outcome,
    Report,
    get,
    names,
    register,
)
from ocokit.store import Context
from ocokit.studies import Cell, Comparison, Fit, Plot, Runs, Sweep
from ocokit.tuning import TUNING_CRITERION, TUNING_OPTIONS, Method, Tuning, choose, grid_search

__all__ = ["TUNING_CRITERION", "TUNING_OPTIONS", "Algorithm", "Cell", "Claim", "ClaimResult", "Comparison", "Context",
           "Experiment", "Figure", "Fit", "Method", "Option", "Outcome", "Plot", "Report", "Runs", "Sweep", "Tuning",
           "choose", "get", "grid_search", "names", "register"]  # fmt: skip
