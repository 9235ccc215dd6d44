"""Online learners: ``init / decide / update`` over explicit state (see
[`AbstractLearner`][ocokit.algorithms.AbstractLearner])."""

from ocokit.algorithms._bandit_tvc import BFWTVC as BFWTVC
from ocokit.algorithms._bandit_tvc import SCBFWTVC as SCBFWTVC
from ocokit.algorithms._base import AbstractLearner as AbstractLearner
from ocokit.algorithms._base import Needs as Needs
from ocokit.algorithms._base import ProblemInfo as ProblemInfo
from ocokit.algorithms._base import hyperparameter as hyperparameter
from ocokit.algorithms._coldq import COLDQ as COLDQ
from ocokit.algorithms._coldq import COLDQExpert as COLDQExpert
from ocokit.algorithms._constant import Constant as Constant
from ocokit.algorithms._drift_plus_penalty import YuNeelyWei as YuNeelyWei
from ocokit.algorithms._loo_bogd import LOOBBGD as LOOBBGD
from ocokit.algorithms._loo_bogd import LOOBOGD as LOOBOGD
from ocokit.algorithms._lpm import LBPM as LBPM
from ocokit.algorithms._lpm import LPM as LPM
from ocokit.algorithms._memory_predictions import BanditOCOMemory as BanditOCOMemory
from ocokit.algorithms._memory_predictions import OCOMemoryLimitedPredictions as OCOMemoryLimitedPredictions
from ocokit.algorithms._mirror import AbstractMirrorGeometry as AbstractMirrorGeometry
from ocokit.algorithms._mirror import EntropicGeometry as EntropicGeometry
from ocokit.algorithms._mirror import EuclideanGeometry as EuclideanGeometry
from ocokit.algorithms._mirror import Hedge as Hedge
from ocokit.algorithms._mirror_prox import MirrorProx as MirrorProx
from ocokit.algorithms._mirror_prox import SimplexMirrorProx as SimplexMirrorProx
from ocokit.algorithms._ofw import OFW as OFW
from ocokit.algorithms._ofw import SCOFW as SCOFW
from ocokit.algorithms._ofw import OFWLineSearch as OFWLineSearch
from ocokit.algorithms._ogd import OGD as OGD
from ocokit.algorithms._opdp import OPDP as OPDP
from ocokit.algorithms._primal_dual import RECOO as RECOO
from ocokit.algorithms._primal_dual import Yi2021 as Yi2021
from ocokit.algorithms._primal_dual import Yi2023 as Yi2023
from ocokit.algorithms._sinha_vaze import SinhaVaze as SinhaVaze
from ocokit.algorithms._tvc import OFWTVC as OFWTVC
from ocokit.algorithms._tvc import SCOFWTVC as SCOFWTVC
from ocokit.algorithms._yuan_lamperski import YuanLamperski as YuanLamperski

# Each family module adds its names here and to __all__.

__all__ = [
    "BFWTVC",
    "COLDQ",
    "LBPM",
    "LOOBBGD",
    "LOOBOGD",
    "LPM",
    "OFW",
    "OFWTVC",
    "OGD",
    "OPDP",
    "RECOO",
    "SCBFWTVC",
    "SCOFW",
    "SCOFWTVC",
    "AbstractLearner",
    "AbstractMirrorGeometry",
    "BanditOCOMemory",
    "COLDQExpert",
    "Constant",
    "EntropicGeometry",
    "EuclideanGeometry",
    "Hedge",
    "MirrorProx",
    "Needs",
    "OCOMemoryLimitedPredictions",
    "OFWLineSearch",
    "ProblemInfo",
    "SimplexMirrorProx",
    "SinhaVaze",
    "Yi2021",
    "Yi2023",
    "YuNeelyWei",
    "YuanLamperski",
    "hyperparameter",
]
