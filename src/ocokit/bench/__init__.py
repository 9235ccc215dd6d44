"""The benchmark: every learner against every compatible standard problem, and the leaderboard (``ocokit bench``).

The suite is declared as data ([`SUITE`][ocokit.bench.SUITE]); who plays what is declared on the classes
([`why_not`][ocokit.bench.why_not] reads each learner's [`Needs`][ocokit.algorithms.Needs]); every entrant plays at
its ``from_theory`` parameters over seeds ``0..S-1`` with common random numbers
([`play_board`][ocokit.bench.play_board], runs in the experiments' store, resumed); the leaderboard reports regret,
CCV, squared violation and time per round, the regret-CCV Pareto front per problem and how often each learner is on
it ([`summarise`][ocokit.bench.summarise], [`write_leaderboard`][ocokit.bench.write_leaderboard]).

Example:
    >>> from ocokit import bench
    >>> [p.name for p in bench.SUITE][:3]
    ['regression', 'online-qp', 'online-lp']
"""

from ocokit.bench._board import MEASURES as MEASURES
from ocokit.bench._board import Board as Board
from ocokit.bench._board import Result as Result
from ocokit.bench._board import play_board as play_board
from ocokit.bench._report import markdown as markdown
from ocokit.bench._report import pareto_front as pareto_front
from ocokit.bench._report import summarise as summarise
from ocokit.bench._report import tables as tables
from ocokit.bench._report import write_html as write_html
from ocokit.bench._report import write_leaderboard as write_leaderboard
from ocokit.bench._report import write_parquet as write_parquet
from ocokit.bench._suite import SUITE as SUITE
from ocokit.bench._suite import Entrant as Entrant
from ocokit.bench._suite import SuiteProblem as SuiteProblem
from ocokit.bench._suite import entrant as entrant
from ocokit.bench._suite import library as library
from ocokit.bench._suite import problems as problems
from ocokit.bench._suite import why_not as why_not

__all__ = [
    "MEASURES",
    "SUITE",
    "Board",
    "Entrant",
    "Result",
    "SuiteProblem",
    "entrant",
    "library",
    "markdown",
    "pareto_front",
    "play_board",
    "problems",
    "summarise",
    "tables",
    "why_not",
    "write_html",
    "write_leaderboard",
    "write_parquet",
]
