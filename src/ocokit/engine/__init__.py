"""Running learners against problems: one compiled ``lax.scan`` per run, ``vmap`` for sweeps.

[`run`][ocokit.run] plays T rounds of the online game inside a single ``jax.lax.scan`` and returns a
[`Trajectory`][ocokit.Trajectory] of per-round quantities. [`sweep`][ocokit.sweep] vmaps the same compiled code over
seeds and over
a batch of learners (a hyperparameter grid made with [`stack`][ocokit.stack]), in chunks of bounded memory.
[`comparators`][ocokit.comparators]
computes the comparators' losses of some seeds once, for every learner. [`Session`][ocokit.Session] steps one round at a
time
against a live stream.

Randomness: a run's key is split into an environment key (round data, via ``fold_in(env_key, t)``) and a learner
key (`split_key`). Runs given the same key face identical rounds, whatever the learner (common random
numbers); round t's data depends on the environment key and t only, never on T or on how rounds are drawn.

Every program is compiled with XLA's defaults unless the caller passes ``compiler_options``: the Python API, the
command line and Ray workers compute the same numbers.
"""

from ocokit.engine._comparators import comparators as comparators
from ocokit.engine._comparators import with_comparators as with_comparators
from ocokit.engine._game import run as run
from ocokit.engine._game import stack as stack
from ocokit.engine._game import sweep as sweep
from ocokit.engine._rounds import split_key as split_key
from ocokit.engine._session import Session as Session
from ocokit.trajectory import NonFiniteError as NonFiniteError
from ocokit.trajectory import Trajectory as Trajectory

__all__ = [
    "NonFiniteError",
    "Session",
    "Trajectory",
    "comparators",
    "run",
    "split_key",
    "stack",
    "sweep",
    "with_comparators",
]
