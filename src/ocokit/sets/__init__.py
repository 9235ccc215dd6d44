"""Decision sets with linear minimisation oracles, projections and geometry (see :class:`AbstractSet`)."""

from ocokit.sets._base import AbstractSet as AbstractSet
from ocokit.sets._box import Box as Box

# Each family module adds its names here and to __all__.

__all__ = ["AbstractSet", "Box"]
