"""Decision sets with linear minimisation oracles, projections and geometry (see
[`AbstractSet`][ocokit.sets.AbstractSet])."""

from ocokit.sets._balls import L1Ball as L1Ball
from ocokit.sets._balls import L2Ball as L2Ball
from ocokit.sets._balls import LpBall as LpBall
from ocokit.sets._base import AbstractSet as AbstractSet
from ocokit.sets._box import Box as Box
from ocokit.sets._ksparse import KSparsePolytope as KSparsePolytope
from ocokit.sets._nuclear import NuclearNormBall as NuclearNormBall
from ocokit.sets._simplex import Simplex as Simplex

# A new set adds its one export line above; __all__ lists every name exported here.
__all__ = sorted(name for name in dir() if not name.startswith("_"))
