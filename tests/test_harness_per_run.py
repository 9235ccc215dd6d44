"""``studies.per_run``: an offline quantity on each seed's environment is the one the seed's run plays."""

import jax
import jax.numpy as jnp
import numpy as np

import ocokit
from ocokit.algorithms import Constant
from ocokit.problems import OnlineLinear
from ocokit.sets import Box
from ocokit.studies import per_run


def _losses_at_center(problem, episode, env_key, T, scale):
    def loss(t):
        data = problem.round_data(episode, jax.random.fold_in(env_key, t), t)
        return scale * problem.loss(data, problem.domain.center())

    return jax.vmap(loss)(jnp.arange(1, T + 1, dtype=jnp.int32))


def test_per_run_sees_the_rounds_each_seeds_run_plays():
    problem, T, seeds = OnlineLinear(Box(0.0, 1.0, dim=3), drift=1.0, noise=1.0), 12, [0, 5, 7]
    got = per_run(_losses_at_center, problem, T, seeds, 2.0)
    assert got.shape == (len(seeds), T)
    for i, s in enumerate(seeds):  # Constant plays the centre every round: its losses are f_t(centre)
        want = np.asarray(ocokit.run(Constant(), problem, T, s, comparators=False).loss)
        np.testing.assert_allclose(got[i], 2.0 * want, rtol=1e-12, atol=1e-12)
    assert not np.allclose(got[0], got[1])  # different seeds, different environments
