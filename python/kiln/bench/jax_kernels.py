"""jax.numpy translations of the workloads (same names as in workloads.py), run under jax.jit.

float64 is enabled before anything else is traced, so that JAX computes in NumPy's dtypes
instead of silently narrowing float64 inputs to float32."""
import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402  (after the x64 switch, on purpose)

from . import workloads as _workloads  # noqa: E402


def sin_cos(x):
    return jnp.sin(x) + jnp.cos(x)


sin_cos_0d = sin_cos
sin_cos_16m = sin_cos


def numpy_fn(X, Y):
    X_mean, X_std = X.mean(axis=0), X.std(axis=0)
    Y_mean, Y_std = Y.mean(axis=0), Y.std(axis=0)
    X_std = jnp.where(X_std == 0, 1, X_std)  # arrays are immutable: the masked store as where
    Y_std = jnp.where(Y_std == 0, 1, Y_std)
    X_normalized = (X - X_mean) / X_std
    Y_normalized = (Y - Y_mean) / Y_std
    intermediate_result = jnp.sum(X_normalized[:, :, None] * Y_normalized[:, None, :],
                                  axis=(-2, -1))
    intermediate_result = jnp.clip(intermediate_result, -1, 1)
    result = jnp.exp(intermediate_result)
    regularization = 0.001 * jnp.sum(X_normalized ** 2)
    return result + regularization


def kmeans(X, means):
    return jnp.argmin(jnp.linalg.norm(X - means[:, None], axis=2), axis=0)


kmeans_f64 = kmeans
kmeans_f32 = kmeans


def softmax(x):
    shifted = x - x.max(axis=-1, keepdims=True)
    exponentials = jnp.exp(shifted)
    return exponentials / exponentials.sum(axis=-1, keepdims=True)


def layer_norm(x, gamma, beta):
    mean = x.mean(axis=-1, keepdims=True)
    variance = x.var(axis=-1, keepdims=True)
    return (x - mean) / jnp.sqrt(variance + 1e-5) * gamma + beta


def pairwise_distances(A, B):
    difference = A[:, None, :] - B[None, :, :]
    return jnp.sqrt(jnp.sum(difference * difference, axis=-1))


def stencil(u):
    return 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])


def heat_loop(u):
    def step(_, u):
        return u.at[1:-1].set(u[1:-1] + 0.2 * (u[2:] - 2.0 * u[1:-1] + u[:-2]))
    return jax.lax.fori_loop(0, _workloads.HEAT_STEPS, step, u)


def option_pricer(z):
    rate, volatility, maturity = _workloads.RATE, _workloads.VOLATILITY, _workloads.MATURITY
    drift = (rate - 0.5 * volatility * volatility) * maturity
    final_price = _workloads.SPOT * jnp.exp(drift + volatility * jnp.sqrt(maturity) * z)
    payoff = jnp.maximum(final_price - _workloads.STRIKE, 0.0)
    return jnp.exp(-rate * maturity) * jnp.mean(payoff)


def masked_reduction(x):
    mask = x > 0.5
    return jnp.sum(jnp.where(mask, x * x, 0.0)) / jnp.sum(mask)


def cumulative_sum(x):
    return jnp.cumsum(x)


def integer_hash(x):
    y = (x * 1103515245 + 12345) & 0x7FFFFFFF
    y = y ^ (y >> 7)
    return y % 1009


def mlp(X, W1, b1, W2, b2):
    hidden = jnp.maximum(X @ W1 + b1, 0.0)
    return jnp.tanh(hidden @ W2 + b2)


def polynomial(x):
    coefficients = _workloads.POLYNOMIAL_COEFFICIENTS
    result = jnp.zeros_like(x) + coefficients[0]
    for coefficient in coefficients[1:]:
        result = result * x + coefficient
    return result


def gelu(x):
    return 0.5 * x * (1.0 + jnp.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


def logsumexp(x):
    largest = x.max(axis=-1)
    return largest + jnp.log(jnp.sum(jnp.exp(x - largest[:, None]), axis=-1))
