"""Online problems (environments): round data, losses, constraints, constants and comparators."""

from ocokit.problems._base import AbstractProblem as AbstractProblem
from ocokit.problems._base import ProblemConstants as ProblemConstants
from ocokit.problems._custom import CustomProblem as CustomProblem
from ocokit.problems._regression import TimeVaryingRegression as TimeVaryingRegression

# Each family module adds its names here and to __all__.

__all__ = ["AbstractProblem", "CustomProblem", "ProblemConstants", "TimeVaryingRegression"]
