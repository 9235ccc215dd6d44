"""ocokit: online convex optimization under constraints, in JAX.

Learners ([`ocokit.algorithms`][ocokit.algorithms]) play against problems ([`ocokit.problems`][ocokit.problems])
over decision sets ([`ocokit.sets`][ocokit.sets]); [`run`][ocokit.run] plays a whole game as one compiled
``lax.scan``, [`sweep`][ocokit.sweep] vmaps many, [`Session`][ocokit.Session] steps one round at a time;
[`ocokit.metrics`][ocokit.metrics] scores trajectories and [`ocokit.experiments`][ocokit.experiments] reproduces
the papers' figures, named by [`ocokit.papers`][ocokit.papers]. ocokit never changes JAX's global
configuration: enable float64 yourself (``jax.config.update("jax_enable_x64", True)``) if you want it;
the CLI does.

The names below are imported on first use (SPEC 1, lazy loading): ``import ocokit`` is quick, and the
command line can answer Ctrl-C while JAX loads.
"""

import importlib
from typing import TYPE_CHECKING

from ocokit._version import __version__ as __version__

_WHERE = {
    **dict.fromkeys(("algorithms", "datasets", "executors", "feedback", "metrics", "papers", "problems", "sets")),
    **{name: "ocokit.engine" for name in ("Session", "comparators", "run", "stack", "sweep", "with_comparators")},
    **{name: "ocokit.trajectory" for name in ("NonFiniteError", "Trajectory")},
}
"""Each lazily imported public name: the module it is read from (``None``: it is a subpackage or module)."""

if TYPE_CHECKING:  # what static tools (type checkers, the docs' API pages) read
    from ocokit import algorithms as algorithms
    from ocokit import datasets as datasets
    from ocokit import executors as executors
    from ocokit import feedback as feedback
    from ocokit import metrics as metrics
    from ocokit import papers as papers
    from ocokit import problems as problems
    from ocokit import sets as sets
    from ocokit.engine import Session as Session
    from ocokit.engine import comparators as comparators
    from ocokit.engine import run as run
    from ocokit.engine import stack as stack
    from ocokit.engine import sweep as sweep
    from ocokit.engine import with_comparators as with_comparators
    from ocokit.trajectory import NonFiniteError as NonFiniteError
    from ocokit.trajectory import Trajectory as Trajectory

__all__ = [
    "NonFiniteError",
    "Session",
    "Trajectory",
    "__version__",
    "algorithms",
    "comparators",
    "datasets",
    "executors",
    "feedback",
    "metrics",
    "papers",
    "problems",
    "run",
    "sets",
    "stack",
    "sweep",
    "with_comparators",
]


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'ocokit' has no attribute {name!r}")
    where = _WHERE[name]
    module = importlib.import_module(f"ocokit.{name}" if where is None else where)
    value = module if where is None else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
