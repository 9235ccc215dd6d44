"""The experiment registry: one module per paper; importing this package registers them all."""

# Paper modules register their experiments on import; each adds its own line here.
from ocokit.experiments import paper000 as paper000
from ocokit.experiments import paper001 as paper001
from ocokit.experiments import paper002 as paper002
from ocokit.experiments import paper003 as paper003
from ocokit.experiments import paper004 as paper004
from ocokit.experiments._base import AbstractExperiment as AbstractExperiment
from ocokit.experiments._base import Algorithm as Algorithm
from ocokit.experiments._base import Claim as Claim
from ocokit.experiments._base import ClaimResult as ClaimResult
from ocokit.experiments._base import Report as Report
from ocokit.experiments._base import StandardExperiment as StandardExperiment
from ocokit.experiments._base import get as get
from ocokit.experiments._base import names as names
from ocokit.experiments._base import register as register

__all__ = [
    "AbstractExperiment",
    "Algorithm",
    "Claim",
    "ClaimResult",
    "Report",
    "StandardExperiment",
    "get",
    "names",
    "register",
]
