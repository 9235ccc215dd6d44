"""ocokit: online convex optimization under constraints, in JAX.

Learners (:mod:`ocokit.algorithms`) play against problems (:mod:`ocokit.problems`) over decision sets
(:mod:`ocokit.sets`); :func:`run` plays a whole game as one compiled ``lax.scan``, :func:`sweep` vmaps
many, :class:`Session` steps one round at a time; :mod:`ocokit.metrics` scores trajectories and
:mod:`ocokit.experiments` reproduces the papers' figures. ocokit never changes JAX's global
configuration: enable float64 yourself (``jax.config.update("jax_enable_x64", True)``) if you want it;
the CLI does.
"""

from ocokit import algorithms as algorithms
from ocokit import datasets as datasets
from ocokit import executors as executors
from ocokit import feedback as feedback
from ocokit import metrics as metrics
from ocokit import problems as problems
from ocokit import sets as sets
from ocokit._version import __version__ as __version__
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
    "problems",
    "run",
    "sets",
    "stack",
    "sweep",
    "with_comparators",
]
