"""Online problems (environments): round data, losses, constraints, constants and comparators."""

from ocokit.problems._base import AbstractProblem as AbstractProblem
from ocokit.problems._base import ProblemConstants as ProblemConstants
from ocokit.problems._custom import CustomProblem as CustomProblem
from ocokit.problems._gradual_variation import DriftingAllocation as DriftingAllocation
from ocokit.problems._gradual_variation import DriftingQuadratic as DriftingQuadratic
from ocokit.problems._job_scheduling import JobScheduling as JobScheduling
from ocokit.problems._matrix_completion import OnlineMatrixCompletion as OnlineMatrixCompletion
from ocokit.problems._matrix_completion import synthetic_low_rank_ratings as synthetic_low_rank_ratings
from ocokit.problems._memory import QuadraticWithMemory as QuadraticWithMemory
from ocokit.problems._online_linear import OnlineLinear as OnlineLinear
from ocokit.problems._online_linear import OnlineQuadratic as OnlineQuadratic
from ocokit.problems._qp import OnlineLinearProgram as OnlineLinearProgram
from ocokit.problems._qp import OnlineQuadraticProgram as OnlineQuadraticProgram
from ocokit.problems._regression import TimeVaryingRegression as TimeVaryingRegression

# Each family module adds its names here and to __all__.

__all__ = [
    "AbstractProblem",
    "CustomProblem",
    "DriftingAllocation",
    "DriftingQuadratic",
    "JobScheduling",
    "OnlineLinear",
    "OnlineLinearProgram",
    "OnlineMatrixCompletion",
    "OnlineQuadratic",
    "OnlineQuadraticProgram",
    "ProblemConstants",
    "QuadraticWithMemory",
    "TimeVaryingRegression",
    "synthetic_low_rank_ratings",
]
