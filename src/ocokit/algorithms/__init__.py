"""Online learners: ``init / decide / update`` over explicit state (see :class:`AbstractLearner`)."""

from ocokit.algorithms._base import AbstractLearner as AbstractLearner
from ocokit.algorithms._base import ProblemInfo as ProblemInfo
from ocokit.algorithms._base import hyperparameter as hyperparameter
from ocokit.algorithms._ogd import OGD as OGD

# Each family module adds its names here and to __all__.

__all__ = ["OGD", "AbstractLearner", "ProblemInfo", "hyperparameter"]
