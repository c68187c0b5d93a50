"""Eager PyTorch translations of the workloads (same maths, torch tensors; same names as in
workloads.py). The inputs arrive through torch.from_numpy, so dtypes are NumPy's."""
import torch

from . import workloads as _workloads


def sin_cos(x):
    return torch.sin(x) + torch.cos(x)


sin_cos_0d = sin_cos
sin_cos_16m = sin_cos


def numpy_fn(X, Y):
    X_mean, X_std = X.mean(dim=0), X.std(dim=0, correction=0)
    Y_mean, Y_std = Y.mean(dim=0), Y.std(dim=0, correction=0)
    X_std[X_std == 0] = 1
    Y_std[Y_std == 0] = 1
    X_normalized = (X - X_mean) / X_std
    Y_normalized = (Y - Y_mean) / Y_std
    intermediate_result = torch.sum(X_normalized[:, :, None] * Y_normalized[:, None, :],
                                    dim=(-2, -1))
    intermediate_result = torch.clamp(intermediate_result, -1, 1)
    result = torch.exp(intermediate_result)
    regularization = 0.001 * torch.sum(X_normalized ** 2)
    return result + regularization


def kmeans(X, means):
    return torch.argmin(torch.linalg.norm(X - means[:, None], dim=2), dim=0)


kmeans_f64 = kmeans
kmeans_f32 = kmeans


def softmax(x):
    shifted = x - x.amax(dim=-1, keepdim=True)
    exponentials = torch.exp(shifted)
    return exponentials / exponentials.sum(dim=-1, keepdim=True)


def layer_norm(x, gamma, beta):
    mean = x.mean(dim=-1, keepdim=True)
    variance = x.var(dim=-1, keepdim=True, correction=0)
    return (x - mean) / torch.sqrt(variance + 1e-5) * gamma + beta


def pairwise_distances(A, B):
    difference = A[:, None, :] - B[None, :, :]
    return torch.sqrt(torch.sum(difference * difference, dim=-1))


def stencil(u):
    return 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])


def heat_loop(u):
    u = u.clone()
    for _ in range(_workloads.HEAT_STEPS):
        u[1:-1] = u[1:-1] + 0.2 * (u[2:] - 2.0 * u[1:-1] + u[:-2])
    return u


def option_pricer(z):
    rate, volatility, maturity = _workloads.RATE, _workloads.VOLATILITY, _workloads.MATURITY
    drift = (rate - 0.5 * volatility * volatility) * maturity
    final_price = _workloads.SPOT * torch.exp(drift + volatility * maturity ** 0.5 * z)
    payoff = torch.clamp(final_price - _workloads.STRIKE, min=0.0)
    return torch.exp(torch.tensor(-rate * maturity, dtype=z.dtype)) * torch.mean(payoff)


def masked_reduction(x):
    mask = x > 0.5
    return torch.sum(torch.where(mask, x * x, 0.0)) / torch.sum(mask)


def cumulative_sum(x):
    return torch.cumsum(x, dim=0)


def integer_hash(x):
    y = (x * 1103515245 + 12345) & 0x7FFFFFFF
    y = y ^ (y >> 7)
    return y % 1009


def mlp(X, W1, b1, W2, b2):
    hidden = torch.relu(X @ W1 + b1)
    return torch.tanh(hidden @ W2 + b2)


def polynomial(x):
    coefficients = _workloads.POLYNOMIAL_COEFFICIENTS
    result = torch.zeros_like(x) + coefficients[0]
    for coefficient in coefficients[1:]:
        result = result * x + coefficient
    return result


def gelu(x):
    return 0.5 * x * (1.0 + torch.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


def logsumexp(x):
    largest = x.amax(dim=-1)
    return largest + torch.log(torch.sum(torch.exp(x - largest[:, None]), dim=-1))
