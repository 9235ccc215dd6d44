"""OnlineMatrixCompletion and its synthetic low-rank generator (paper 000, Experiments; spec §5.1)."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ocokit.datasets import load_filmtrust, load_movielens
from ocokit.problems import OnlineMatrixCompletion, synthetic_low_rank_ratings
from ocokit.problems._matrix_completion import _observed_squares


def small(sampling="entry", batch_size=1, radius=4.0, constants="worst_case"):
    ratings = synthetic_low_rank_ratings(6, 5, rank=2, n_obs=14, seed=1)
    return OnlineMatrixCompletion(ratings, radius=radius, sampling=sampling, batch_size=batch_size, constants=constants)


def write_ratings(folder, ratings, kind):
    """A ratings file in the dataset's own format (MovieLens ``u.data`` or FilmTrust ``ratings.txt``)."""
    rel = "ml-100k/u.data" if kind == "movielens" else "filmtrust/ratings.txt"
    path = folder / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    sep = "\t" if kind == "movielens" else " "
    rows = zip(ratings.users + 1, ratings.items + 1, ratings.ratings, strict=True)
    tail = f"{sep}881250949" if kind == "movielens" else ""
    path.write_text("".join(f"{u}{sep}{i}{sep}{r:g}{tail}\n" for u, i, r in rows))
    return path


def test_synthetic_ratings_are_low_rank_distinct_and_in_range():
    r = synthetic_low_rank_ratings(30, 20, rank=3, n_obs=200, low=0.5, high=4.0, step=0.5, seed=4)
    assert (r.n_users, r.n_items) == (30, 20) and r.ratings.shape == (200,)
    assert len(set(zip(r.users.tolist(), r.items.tolist(), strict=True))) == 200  # without replacement
    assert r.ratings.min() >= 0.5 and r.ratings.max() <= 4.0
    np.testing.assert_allclose((r.ratings - 0.5) / 0.5, np.round((r.ratings - 0.5) / 0.5))  # FilmTrust steps
    dense = synthetic_low_rank_ratings(30, 20, rank=3, n_obs=600, seed=4).dense()  # every entry observed
    s = np.linalg.svd(dense - dense.mean(), compute_uv=False)
    # an affine image of a rank-3 matrix: rank <= 4 (the shift adds one)
    assert s[4] <= 1e-10 * s[0] < s[3]
    again = synthetic_low_rank_ratings(30, 20, rank=3, n_obs=200, low=0.5, high=4.0, step=0.5, seed=4)
    np.testing.assert_array_equal(again.ratings, r.ratings)


def test_loss_constraint_and_gradients_match_the_formulas():
    problem = small(sampling="minibatch", batch_size=3)
    key = jax.random.PRNGKey(0)
    data = problem.round_data(None, key, 1)
    X = jax.random.normal(jax.random.PRNGKey(1), (6, 5))
    u, i, r = (np.asarray(a)[np.asarray(data["index"])] for a in (problem.users, problem.items, problem.ratings))
    Xn, PT = np.asarray(X), np.asarray(data["PT"])
    np.testing.assert_allclose(problem.loss(data, X), 0.5 * np.sum((Xn[u, i] - r) ** 2), rtol=1e-12)
    np.testing.assert_allclose(problem.constraints(data, X), [np.trace(PT.T @ Xn)], rtol=1e-12)  # Tr(P_t X)
    grad = np.zeros((6, 5))
    np.add.at(grad, (u, i), Xn[u, i] - r)
    np.testing.assert_allclose(jax.grad(problem.loss, argnums=1)(data, X), grad, rtol=1e-12)
    np.testing.assert_allclose(jax.jacrev(problem.constraints, argnums=1)(data, X)[0], PT, rtol=1e-12)


def test_full_loss_gradient_is_the_scattered_residuals_bit_for_bit_as_one_elementwise_pass():
    problem = OnlineMatrixCompletion(synthetic_low_rank_ratings(30, 40, n_obs=200, step=1.0), radius=10.0)
    X = jax.random.normal(jax.random.PRNGKey(0), (30, 40))
    dX = jax.random.normal(jax.random.PRNGKey(1), (30, 40))

    def reference(X, ratings=problem.ratings):  # the sum over O, differentiated by JAX: a scatter of residuals
        residual = X[problem.users, problem.items] - ratings
        return 0.5 * jnp.sum(residual * residual)

    loss = jax.jit(lambda X: problem.loss(None, X))
    assert loss(X) == jax.jit(reference)(X)  # summed in the same order
    np.testing.assert_array_equal(jax.jit(jax.grad(loss))(X), jax.jit(jax.grad(reference))(X))
    Xn, u, i, r = np.asarray(X), np.asarray(problem.users), np.asarray(problem.items), np.asarray(problem.ratings)
    grad = np.zeros((30, 40))
    grad[u, i] = Xn[u, i] - r
    np.testing.assert_array_equal(jax.grad(loss)(X), grad)  # and NumPy's, exactly (O's entries are distinct)
    hvp = jax.jvp(jax.grad(loss), (X,), (dX,))[1]  # the Hessian: the projection onto O
    np.testing.assert_array_equal(hvp, np.where(grad != 0, np.asarray(dX), 0.0))
    by_ratings = jax.grad(lambda v: _observed_squares(X, problem.users, problem.items, v, problem.observed))
    np.testing.assert_allclose(by_ratings(problem.ratings), jax.grad(lambda v: reference(X, v))(problem.ratings))

    def primitives(f):
        return {eqn.primitive.name for eqn in jax.make_jaxpr(jax.grad(f))(X).jaxpr.eqns}

    assert "scatter-add" in primitives(reference)
    assert "scatter-add" not in primitives(loss)


def test_constraint_is_one_elementwise_pass_without_matrix_products():
    problem = small()
    data = problem.round_data(None, jax.random.PRNGKey(0), 1)
    jaxpr = jax.make_jaxpr(jax.value_and_grad(lambda X: problem.constraints(data, X)[0]))(jnp.zeros((6, 5)))
    primitives = {eqn.primitive.name for eqn in jaxpr.jaxpr.eqns}
    assert not primitives & {"dot_general", "transpose"}, primitives


def test_random_matrices_are_fresh_uniform_and_reproducible():
    problem = OnlineMatrixCompletion(synthetic_low_rank_ratings(40, 50, n_obs=100), radius=1.0)
    env_key = jax.random.PRNGKey(3)
    draw = jax.jit(lambda t: problem.round_data(None, jax.random.fold_in(env_key, t), t)["PT"])
    P1, P2 = np.asarray(draw(1)), np.asarray(draw(2))
    assert P1.shape == (40, 50) and np.all(np.abs(P1) <= 1)
    assert abs(P1.mean()) < 0.05 and abs(P1.var() - 1 / 3) < 0.03  # U[-1, 1]: mean 0, variance 1/3
    assert abs(np.corrcoef(P1.ravel(), P2.ravel())[0, 1]) < 0.1  # fresh every round
    np.testing.assert_array_equal(P1, np.asarray(draw(1)))


def test_random_matrix_stream_is_pinned_and_uniform_on_its_grid():
    """``P_t^T``'s stream (``round_data``'s docstring): ``pcg4d`` keyed by ``jax.random.bits``, grid ``2^-22``."""
    P = np.asarray(small().round_data(None, jax.random.PRNGKey(0), 1)["PT"])
    k = (P + 1) * 2**22  # P = -1 + k 2^-22, k an integer in [0, 2^23)
    np.testing.assert_array_equal(k, np.round(k))
    assert k[0, :3].tolist() == [3440564, 3191369, 5472002] and k[1, 0] == 1259098  # the stream, pinned
    problem = OnlineMatrixCompletion(synthetic_low_rank_ratings(300, 400, n_obs=100), radius=1.0)
    draw = jax.jit(lambda t: problem.round_data(None, jax.random.fold_in(jax.random.PRNGKey(5), t), t)["PT"])
    P1, P2 = np.asarray(draw(1)), np.asarray(draw(2))
    assert P1.min() >= -1 and P1.max() < 1
    counts = np.histogram(P1, bins=32, range=(-1, 1))[0]
    assert np.sum((counts - P1.size / 32) ** 2 / (P1.size / 32)) < 70  # chi^2, 31 dof: 99.99% below 67
    k = ((P1 + 1) * 2**22).astype(np.int64)
    bits = (k[..., None] >> np.arange(23)) & 1
    assert np.abs(bits.mean(axis=(0, 1)) - 0.5).max() < 0.01  # every bit fair (sd 0.0014)
    for a, b in ((P1[:, 1:], P1[:, :-1]), (P1[1:], P1[:-1]), (P1, P2)):  # neighbours in a row, a column, rounds
        assert abs(np.corrcoef(a.ravel(), b.ravel())[0, 1]) < 0.015  # sd 0.003


@pytest.mark.parametrize(("sampling", "batch_size"), [("entry", 1), ("minibatch", 4), ("all", 1)])
def test_sampling_modes(sampling, batch_size):
    problem = small(sampling=sampling, batch_size=batch_size)
    data = problem.round_data(None, jax.random.PRNGKey(2), 5)
    X = jnp.ones((6, 5))
    full = 0.5 * np.sum((1.0 - np.asarray(problem.ratings)) ** 2)
    if sampling == "all":
        assert "index" not in data
        np.testing.assert_allclose(problem.loss(data, X), full, rtol=1e-12)
    else:
        assert data["index"].shape == (batch_size,)
        assert np.all((np.asarray(data["index"]) >= 0) & (np.asarray(data["index"]) < 14))


@pytest.mark.parametrize(("sampling", "batch_size"), [("entry", 1), ("minibatch", 3), ("all", 1)])
def test_constants_bound_the_gradients_and_values_on_vertices_of_K(sampling, batch_size):
    problem = small(sampling=sampling, batch_size=batch_size)
    c = problem.constants()
    assert float(problem.domain.diameter) == 8.0 and c.strong_convexity == 0.0
    rng = np.random.default_rng(0)
    for k in range(6):
        u, v = rng.standard_normal(6), rng.standard_normal(5)
        X = jnp.asarray(4.0 * np.outer(u / np.linalg.norm(u), v / np.linalg.norm(v)))  # a vertex of K
        data = problem.round_data(None, jax.random.PRNGKey(k), k + 1)
        assert np.linalg.norm(jax.grad(problem.loss, argnums=1)(data, X)) <= c.grad_bound
        assert abs(float(problem.loss(data, X))) <= c.loss_bound
        assert abs(float(problem.constraints(data, X)[0])) <= c.constraint_bound
        assert np.linalg.norm(data["PT"]) <= c.constraint_grad_bound


@pytest.mark.parametrize(("sampling", "batch_size"), [("entry", 1), ("minibatch", 3), ("all", 1)])
def test_data_constants_are_the_gradient_and_loss_at_the_start_and_the_drawn_constraint(sampling, batch_size):
    ratings = synthetic_low_rank_ratings(60, 80, n_obs=300, step=1.0, seed=1)
    problem = OnlineMatrixCompletion(ratings, radius=50.0, sampling=sampling, batch_size=batch_size)
    worst = OnlineMatrixCompletion(
        ratings, radius=50.0, sampling=sampling, batch_size=batch_size, constants="worst_case"
    )
    c, w, zero = problem.constants(), worst.constants(), jnp.zeros((60, 80))
    r = np.asarray(ratings.ratings)
    if sampling == "all":  # exactly the gradient norm and the loss at the start X = 0
        data = problem.round_data(None, jax.random.PRNGKey(0), 1)
        np.testing.assert_allclose(np.linalg.norm(jax.grad(problem.loss, argnums=1)(data, zero)), c.grad_bound)
        np.testing.assert_allclose(float(problem.loss(data, zero)), c.loss_bound)
    else:  # the largest of them over the samples
        assert c.grad_bound == batch_size * r.max() and c.loss_bound == 0.5 * batch_size * r.max() ** 2
    # the constraint's as drawn: ||P_t||_F near sqrt(m n / 3), |Tr(P_t X)| <= rho ||P_t||_op near the bound
    for k in range(3):
        P = np.asarray(problem.round_data(None, jax.random.PRNGKey(k), k + 1)["PT"])
        assert abs(np.linalg.norm(P) / c.constraint_grad_bound - 1) < 0.02
        assert abs(50.0 * np.linalg.norm(P, 2) / c.constraint_bound - 1) < 0.1
    assert c.grad_bound < w.grad_bound and c.constraint_bound < w.constraint_bound
    assert c.constraint_grad_bound < w.constraint_grad_bound and c.strong_convexity == w.strong_convexity == 0.0
    with pytest.raises(ValueError, match=r"constants must be one of \['data', 'worst_case'\]"):
        OnlineMatrixCompletion(ratings, constants="tight")


def test_loaders_read_files_in_the_datasets_formats(tmp_path):
    ratings = synthetic_low_rank_ratings(9, 7, n_obs=20, step=1.0, seed=2)
    write_ratings(tmp_path, ratings, "movielens")
    problem = OnlineMatrixCompletion.from_movielens(tmp_path, radius=5.0)
    assert problem.shape == (int(ratings.users.max()) + 1, int(ratings.items.max()) + 1)
    np.testing.assert_allclose(np.sort(np.asarray(problem.ratings)), np.sort(ratings.ratings))
    ft = synthetic_low_rank_ratings(8, 6, n_obs=15, low=0.5, high=4.0, step=0.5, seed=3)
    write_ratings(tmp_path, ft, "filmtrust")
    assert OnlineMatrixCompletion.from_filmtrust(tmp_path).ratings.shape == (15,)
    with pytest.raises(FileNotFoundError, match="OCOKIT_DATA"):
        OnlineMatrixCompletion.from_movielens(tmp_path / "nowhere")


def test_real_data_shapes(data_dir):
    ml = load_movielens(data_dir)
    problem = OnlineMatrixCompletion(ml)
    assert problem.shape == (943, 1682) and problem.ratings.shape == (100_000,)
    c = problem.constants()
    assert problem.sampling == "all" and c.constraint_grad_bound == math.sqrt(943 * 1682 / 3)
    np.testing.assert_allclose(c.grad_bound, np.linalg.norm(ml.ratings), rtol=1e-14)  # ||M_O||_F = 1171.6
    worst = OnlineMatrixCompletion(ml, sampling="entry", constants="worst_case").constants()
    assert worst.grad_bound == 1e4 + 5 and worst.constraint_grad_bound == math.sqrt(943 * 1682)
    assert OnlineMatrixCompletion(load_filmtrust(data_dir)).shape == (1508, 2071)


def test_bad_arguments_raise_value_errors():
    ratings = synthetic_low_rank_ratings(4, 3, n_obs=5)
    with pytest.raises(ValueError, match="sampling"):
        OnlineMatrixCompletion(ratings, sampling="some")
    with pytest.raises(ValueError, match="batch_size"):
        OnlineMatrixCompletion(ratings, sampling="entry", batch_size=3)  # entry sampling takes one entry
    with pytest.raises(ValueError, match="batch_size"):
        OnlineMatrixCompletion(ratings, batch_size=3)  # the default reading sums over all of O
    with pytest.raises(ValueError, match="radius"):
        OnlineMatrixCompletion(ratings, radius=0.0)
    with pytest.raises(ValueError, match="n_obs"):
        synthetic_low_rank_ratings(4, 3, n_obs=13)
    with pytest.raises(ValueError, match="ratings"):
        OnlineMatrixCompletion(np.ones((3, 3)))
