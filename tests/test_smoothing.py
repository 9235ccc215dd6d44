"""Smoothing laws and gradient estimators of ocokit.feedback (paper 002 Definition 1 and Sec. 5)."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from ocokit import feedback as fb

KEY = jax.random.PRNGKey(0)


@pytest.mark.parametrize(
    ("d", "h", "a", "kappa", "variance"),
    [
        (1, 2, 0.6389, 0.4771, 0.1288),
        (1, 3, 0.5623, 0.4261, 0.1010),
        (2, 2, 0.4518, 0.3486, 0.0662),
        (10, 2, 0.2021, 0.1601, 0.0135),
    ],
)
def test_definition_1_half_width_and_the_spec_table(d, h, a, kappa, variance):
    half = fb.truncated_gaussian_half_width(d, h)
    assert half == pytest.approx(a, abs=5e-5)
    k, var, _ = fb.truncated_gaussian_moments(half)
    assert float(k) == pytest.approx(kappa, abs=5e-5)
    assert float(var) == pytest.approx(variance, abs=5e-5)
    assert math.sqrt(d) * half == pytest.approx((2 * (2 * h - 1)) ** -0.25)  # ||u|| bound used in the proofs


def test_experiments_truncation_variance():
    assert float(fb.truncated_gaussian_moments(2.0)[1]) == pytest.approx(0.7737, abs=5e-5)


@pytest.mark.parametrize("a", [0.2, 0.6389, 2.0, 4.0])
def test_closed_form_moments_match_numerical_integration(a):
    kappa, second, fourth = (float(v) for v in fb.truncated_gaussian_moments(a))
    pdf = stats.norm.pdf
    assert kappa == pytest.approx(integrate.quad(pdf, -a, a)[0], rel=1e-10)
    assert second == pytest.approx(integrate.quad(lambda x: x**2 * pdf(x), -a, a)[0] / kappa, rel=1e-9)
    assert fourth == pytest.approx(integrate.quad(lambda x: x**4 * pdf(x), -a, a)[0] / kappa, rel=1e-9)


@pytest.mark.parametrize("a", [0.2021, 0.6389, 2.0])
def test_truncated_sampler_has_its_closed_form_law(a):
    n = 200_000
    u = np.asarray(fb.sample_direction(KEY, (n,), "truncated_gaussian", half_width=a))
    assert u.dtype == np.float64 and np.all(np.abs(u) <= a)
    _, second, fourth = (float(v) for v in fb.truncated_gaussian_moments(a))
    se2 = math.sqrt((fourth - second**2) / n)
    assert abs(u.mean()) < 5 * math.sqrt(second / n)
    assert abs((u**2).mean() - second) < 5 * se2
    assert abs((u**4).mean() - fourth) < 6 * math.sqrt(np.var(u**4) / n)
    ks = stats.kstest(u, stats.truncnorm(-a, a).cdf)
    assert ks.pvalue > 1e-3


def test_truncated_sampler_coordinates_are_independent_and_batched_half_widths_vmap():
    u = np.asarray(fb.sample_direction(KEY, (100_000, 2), "truncated_gaussian", half_width=1.0))
    assert abs(np.corrcoef(u.T)[0, 1]) < 0.02
    widths = jnp.array([0.5, 2.0])
    draws = jax.vmap(lambda a: fb.sample_direction(KEY, (1000,), "truncated_gaussian", half_width=a))(widths)
    assert float(jnp.abs(draws[0]).max()) <= 0.5 < float(jnp.abs(draws[1]).max()) <= 2.0


@settings(max_examples=25, deadline=None)
@given(a=st.floats(0.05, 6.0))
def test_truncated_variance_lies_below_the_normal_and_the_uniform(a):
    _, second, fourth = (float(v) for v in fb.truncated_gaussian_moments(a))
    assert 0 < second < min(1.0, a * a / 3.0)
    assert second**2 <= fourth <= 3.0  # Jensen; and below the untruncated kurtosis


def test_every_law_has_its_support_and_second_moment():
    n = 100_000
    g = np.asarray(fb.sample_direction(KEY, (n,), "gaussian"))
    assert abs(g.var() - 1.0) < 0.02
    r = np.asarray(fb.sample_direction(KEY, (n,), "bernoulli"))
    assert set(np.unique(r)) == {-1.0, 1.0} and abs(r.mean()) < 0.02
    s = np.asarray(fb.sample_direction(KEY, (3, 4), "sphere"))
    assert np.linalg.norm(s) == pytest.approx(1.0)
    np.testing.assert_array_equal(s, np.asarray(fb.sample_unit_sphere(KEY, (3, 4))))
    assert float(fb.direction_variance("sphere", (3, 4))) == pytest.approx(1 / 12)
    assert float(fb.direction_variance("rademacher", (5,))) == 1.0
    assert float(fb.direction_variance("truncated_gaussian", (5,), half_width=2.0)) == pytest.approx(0.7737, 1e-4)


def test_unknown_law_and_missing_half_width_raise():
    with pytest.raises(ValueError, match="law must be one of"):
        fb.sample_direction(KEY, (2,), "cauchy")
    with pytest.raises(ValueError, match="half_width"):
        fb.sample_direction(KEY, (2,), "truncated_gaussian")
    with pytest.raises(ValueError, match="half_width"):
        fb.direction_variance("truncated_gaussian", (2,))
    with pytest.raises(ValueError, match="h must be"):
        fb.truncated_gaussian_half_width(2, 0)


def _quadratic(n, key=1):
    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(key), 3)
    M = jax.random.normal(k1, (n, n))
    A = M @ M.T + jnp.eye(n)
    b = jax.random.normal(k2, (n,))
    x = jax.random.normal(k3, (n,))
    return (lambda y: 0.5 * y @ A @ y + b @ y), A @ x + b, x


@pytest.mark.parametrize(
    ("law", "half_width", "scale"),
    [
        ("truncated_gaussian", 2.0, 1.0),
        ("truncated_gaussian", 0.4518, 1.0),
        ("gaussian", None, 1.0),
        ("rademacher", None, 1.0),
        ("sphere", None, 3.0),
    ],
)
def test_two_point_estimate_on_a_quadratic_has_mean_sigma_a_squared_times_the_gradient(law, half_width, scale):
    # Spec §1.6 caveat: the estimate is exactly (grad f . u) u, so its mean is E[u u^T] grad f = s_a^2 grad f.
    f, grad, x = _quadratic(3)
    keys = jax.random.split(KEY, 40_000)
    us = jax.vmap(lambda k: fb.sample_direction(k, (3,), law, half_width=half_width))(keys)
    est = jax.vmap(lambda u: fb.two_point_estimate(f, x, u, 0.3, scale))(us)
    np.testing.assert_allclose(est, scale * (us @ grad)[:, None] * us, rtol=1e-9, atol=1e-9)
    factor = scale * float(fb.direction_variance(law, (3,), half_width=half_width))
    se = np.asarray(est).std(axis=0) / math.sqrt(len(keys))
    assert np.all(np.abs(np.asarray(est).mean(axis=0) - factor * np.asarray(grad)) < 5 * se + 1e-12)
    if law == "truncated_gaussian":
        assert factor < 1.0  # biased: Stein's identity fails for the truncated law


def test_one_point_estimators_agree_and_are_unbiased_for_linear_losses():
    u = fb.sample_unit_sphere(KEY, (4,))
    np.testing.assert_allclose(fb.one_point_estimate(2.5, u, 0.1, scale=4), fb.one_point_sphere_estimate(2.5, u, 0.1))
    c = jnp.array([1.0, -2.0, 0.5])
    keys = jax.random.split(KEY, 40_000)
    us = jax.vmap(lambda k: fb.sample_direction(k, (3,), "rademacher"))(keys)
    est = jax.vmap(lambda u: fb.one_point_estimate(c @ (0.2 * u) + 1.0, u, 0.2))(us)
    se = np.asarray(est).std(axis=0) / math.sqrt(len(keys))
    assert np.all(np.abs(np.asarray(est).mean(axis=0) - np.asarray(c)) < 5 * se)
