"""Machine learning written in NumPy as classes and loops, by others: Erik Linder-Norén's
ML-From-Scratch (github.com/eriklindernoren/ML-From-Scratch, MIT License, Copyright (c) 2017
Erik Linder-Norén): activation functions, losses, optimizers, layers (Dense, Conv2D over
image_to_column / column_to_image, RNN, pooling, padding), utils and kernels, adapted: weights
come from a seeded Generator passed in (np.random's global draws in the original), pooling
passes 'valid' where the original passes its padding number as image_to_column's output shape,
and docstrings are left out. Methods are compiled bound (`kiln.compile(layer.forward_pass)`) and
checked against a copy of the object run eagerly, results and the object's arrays afterwards;
functions as in test_numpy_programs.py. Sizes are small (bench/ measures speed)."""
import copy
import math
from itertools import combinations_with_replacement

import numpy as np
import pytest

import kiln
from test_numpy_programs import _assert_same, check_program


# -- deep_learning/activation_functions.py ---------------------------------------------------

class Sigmoid():
    def __call__(self, x):
        return 1 / (1 + np.exp(-x))

    def gradient(self, x):
        return self.__call__(x) * (1 - self.__call__(x))


class Softmax():
    def __call__(self, x):
        e_x = np.exp(x - np.max(x, axis=-1, keepdims=True))
        return e_x / np.sum(e_x, axis=-1, keepdims=True)

    def gradient(self, x):
        p = self.__call__(x)
        return p * (1 - p)


class TanH():
    def __call__(self, x):
        return 2 / (1 + np.exp(-2 * x)) - 1

    def gradient(self, x):
        return 1 - np.power(self.__call__(x), 2)


class ReLU():
    def __call__(self, x):
        return np.where(x >= 0, x, 0)

    def gradient(self, x):
        return np.where(x >= 0, 1, 0)


class LeakyReLU():
    def __init__(self, alpha=0.2):
        self.alpha = alpha

    def __call__(self, x):
        return np.where(x >= 0, x, self.alpha * x)

    def gradient(self, x):
        return np.where(x >= 0, 1, self.alpha)


class ELU():
    def __init__(self, alpha=0.1):
        self.alpha = alpha

    def __call__(self, x):
        return np.where(x >= 0.0, x, self.alpha * (np.exp(x) - 1))

    def gradient(self, x):
        return np.where(x >= 0.0, 1, self.__call__(x) + self.alpha)


class SELU():
    def __init__(self):
        self.alpha = 1.6732632423543772848170429916717
        self.scale = 1.0507009873554804934193349852946

    def __call__(self, x):
        return self.scale * np.where(x >= 0.0, x, self.alpha * (np.exp(x) - 1))

    def gradient(self, x):
        return self.scale * np.where(x >= 0.0, 1, self.alpha * np.exp(x))


class SoftPlus():
    def __call__(self, x):
        return np.log(1 + np.exp(x))

    def gradient(self, x):
        return 1 / (1 + np.exp(-x))


ACTIVATIONS = {'relu': ReLU, 'sigmoid': Sigmoid, 'selu': SELU, 'elu': ELU, 'softmax': Softmax,
               'leaky_relu': LeakyReLU, 'tanh': TanH, 'softplus': SoftPlus}


# -- deep_learning/loss_functions.py, utils/data_operation.py --------------------------------

def accuracy_score(y_true, y_pred):
    accuracy = np.sum(y_true == y_pred, axis=0) / len(y_true)
    return accuracy


class SquareLoss():
    def loss(self, y, y_pred):
        return 0.5 * np.power((y - y_pred), 2)

    def gradient(self, y, y_pred):
        return -(y - y_pred)


class CrossEntropy():
    def loss(self, y, p):
        p = np.clip(p, 1e-15, 1 - 1e-15)
        return - y * np.log(p) - (1 - y) * np.log(1 - p)

    def acc(self, y, p):
        return accuracy_score(np.argmax(y, axis=1), np.argmax(p, axis=1))

    def gradient(self, y, p):
        p = np.clip(p, 1e-15, 1 - 1e-15)
        return - (y / p) + (1 - y) / (1 - p)


def mean_squared_error(y_true, y_pred):
    mse = np.mean(np.power(y_true - y_pred, 2))
    return mse


def calculate_variance(X):
    mean = np.ones(np.shape(X)) * X.mean(0)
    n_samples = np.shape(X)[0]
    variance = (1 / n_samples) * np.diag((X - mean).T.dot(X - mean))
    return variance


def calculate_std_dev(X):
    std_dev = np.sqrt(calculate_variance(X))
    return std_dev


def calculate_covariance_matrix(X, Y=None):
    if Y is None:
        Y = X
    n_samples = np.shape(X)[0]
    covariance_matrix = (1 / (n_samples-1)) * (X - X.mean(axis=0)).T.dot(Y - Y.mean(axis=0))
    return np.array(covariance_matrix, dtype=float)


def calculate_correlation_matrix(X, Y=None):
    if Y is None:
        Y = X
    n_samples = np.shape(X)[0]
    covariance = (1 / n_samples) * (X - X.mean(0)).T.dot(Y - Y.mean(0))
    std_dev_X = np.expand_dims(calculate_std_dev(X), 1)
    std_dev_y = np.expand_dims(calculate_std_dev(Y), 1)
    correlation_matrix = np.divide(covariance, std_dev_X.dot(std_dev_y.T))
    return np.array(correlation_matrix, dtype=float)


# -- utils/data_manipulation.py, utils/kernels.py --------------------------------------------

def polynomial_features(X, degree):
    n_samples, n_features = np.shape(X)

    def index_combinations():
        combs = [combinations_with_replacement(range(n_features), i) for i in range(0, degree + 1)]
        flat_combs = [item for sublist in combs for item in sublist]
        return flat_combs

    combinations = index_combinations()
    n_output_features = len(combinations)
    X_new = np.empty((n_samples, n_output_features))
    for i, index_combs in enumerate(combinations):
        X_new[:, i] = np.prod(X[:, index_combs], axis=1)
    return X_new


def normalize(X, axis=-1, order=2):
    l2 = np.atleast_1d(np.linalg.norm(X, order, axis))
    l2[l2 == 0] = 1
    return X / np.expand_dims(l2, axis)


def standardize(X):
    X_std = X
    mean = X.mean(axis=0)
    std = X.std(axis=0)
    for col in range(np.shape(X)[1]):
        if std[col]:
            X_std[:, col] = (X_std[:, col] - mean[col]) / std[col]
    return X_std


def to_categorical(x, n_col=None):
    if not n_col:
        n_col = np.amax(x) + 1
    one_hot = np.zeros((x.shape[0], n_col))
    one_hot[np.arange(x.shape[0]), x] = 1
    return one_hot


def make_diagonal(x):
    m = np.zeros((len(x), len(x)))
    for i in range(len(m[0])):
        m[i, i] = x[i]
    return m


def polynomial_kernel(power, coef, **kwargs):
    def f(x1, x2):
        return (np.inner(x1, x2) + coef)**power
    return f


def rbf_kernel(gamma, **kwargs):
    def f(x1, x2):
        distance = np.linalg.norm(x1 - x2) ** 2
        return np.exp(-gamma * distance)
    return f


def kernel_matrix(X, kernel):
    """SupportVectorMachine.fit's kernel matrix, its two loops over the samples."""
    n_samples = X.shape[0]
    K = np.zeros((n_samples, n_samples))
    for i in range(n_samples):
        for j in range(n_samples):
            K[i, j] = kernel(X[i], X[j])
    return K


# -- deep_learning/optimizers.py -------------------------------------------------------------

class StochasticGradientDescent():
    def __init__(self, learning_rate=0.01, momentum=0.9):
        self.learning_rate = learning_rate
        self.momentum = momentum
        self.w_updt = None

    def update(self, w, grad_wrt_w):
        if self.w_updt is None:
            self.w_updt = np.zeros(np.shape(w))
        self.w_updt = self.momentum * self.w_updt + (1 - self.momentum) * grad_wrt_w
        return w - self.learning_rate * self.w_updt


class Adagrad():
    def __init__(self, learning_rate=0.01):
        self.learning_rate = learning_rate
        self.G = None
        self.eps = 1e-8

    def update(self, w, grad_wrt_w):
        if self.G is None:
            self.G = np.zeros(np.shape(w))
        self.G += np.power(grad_wrt_w, 2)
        return w - self.learning_rate * grad_wrt_w / np.sqrt(self.G + self.eps)


class RMSprop():
    def __init__(self, learning_rate=0.01, rho=0.9):
        self.learning_rate = learning_rate
        self.Eg = None
        self.eps = 1e-8
        self.rho = rho

    def update(self, w, grad_wrt_w):
        if self.Eg is None:
            self.Eg = np.zeros(np.shape(grad_wrt_w))
        self.Eg = self.rho * self.Eg + (1 - self.rho) * np.power(grad_wrt_w, 2)
        return w - self.learning_rate * grad_wrt_w / np.sqrt(self.Eg + self.eps)


class Adam():
    def __init__(self, learning_rate=0.001, b1=0.9, b2=0.999):
        self.learning_rate = learning_rate
        self.eps = 1e-8
        self.m = None
        self.v = None
        self.b1 = b1
        self.b2 = b2

    def update(self, w, grad_wrt_w):
        if self.m is None:
            self.m = np.zeros(np.shape(grad_wrt_w))
            self.v = np.zeros(np.shape(grad_wrt_w))
        self.m = self.b1 * self.m + (1 - self.b1) * grad_wrt_w
        self.v = self.b2 * self.v + (1 - self.b2) * np.power(grad_wrt_w, 2)
        m_hat = self.m / (1 - self.b1)
        v_hat = self.v / (1 - self.b2)
        self.w_updt = self.learning_rate * m_hat / (np.sqrt(v_hat) + self.eps)
        return w - self.w_updt


# -- deep_learning/layers.py -----------------------------------------------------------------

class Dense():
    def __init__(self, n_units, input_shape, optimizer, rng):
        self.input_shape, self.n_units = input_shape, n_units
        limit = 1 / math.sqrt(self.input_shape[0])
        self.W = rng.uniform(-limit, limit, (self.input_shape[0], self.n_units))
        self.w0 = np.zeros((1, self.n_units))
        self.W_opt, self.w0_opt = copy.copy(optimizer), copy.copy(optimizer)

    def forward_pass(self, X, training=True):
        self.layer_input = X
        return X.dot(self.W) + self.w0

    def backward_pass(self, accum_grad):
        W = self.W
        grad_w = self.layer_input.T.dot(accum_grad)
        grad_w0 = np.sum(accum_grad, axis=0, keepdims=True)
        self.W = self.W_opt.update(self.W, grad_w)
        self.w0 = self.w0_opt.update(self.w0, grad_w0)
        accum_grad = accum_grad.dot(W.T)
        return accum_grad


class RNN():
    def __init__(self, n_units, input_shape, rng, activation='tanh', bptt_trunc=5):
        self.input_shape, self.n_units = input_shape, n_units
        self.activation = ACTIVATIONS[activation]()
        self.bptt_trunc = bptt_trunc
        timesteps, input_dim = self.input_shape
        limit = 1 / math.sqrt(input_dim)
        self.U = rng.uniform(-limit, limit, (self.n_units, input_dim))
        limit = 1 / math.sqrt(self.n_units)
        self.V = rng.uniform(-limit, limit, (input_dim, self.n_units))
        self.W = rng.uniform(-limit, limit, (self.n_units, self.n_units))

    def forward_pass(self, X, training=True):
        self.layer_input = X
        batch_size, timesteps, input_dim = X.shape
        self.state_input = np.zeros((batch_size, timesteps, self.n_units))
        self.states = np.zeros((batch_size, timesteps+1, self.n_units))
        self.outputs = np.zeros((batch_size, timesteps, input_dim))
        self.states[:, -1] = np.zeros((batch_size, self.n_units))
        for t in range(timesteps):
            self.state_input[:, t] = X[:, t].dot(self.U.T) + self.states[:, t-1].dot(self.W.T)
            self.states[:, t] = self.activation(self.state_input[:, t])
            self.outputs[:, t] = self.states[:, t].dot(self.V.T)
        return self.outputs


def determine_padding(filter_shape, output_shape="same"):
    if output_shape == "valid":
        return (0, 0), (0, 0)
    elif output_shape == "same":
        filter_height, filter_width = filter_shape
        pad_h1 = int(math.floor((filter_height - 1)/2))
        pad_h2 = int(math.ceil((filter_height - 1)/2))
        pad_w1 = int(math.floor((filter_width - 1)/2))
        pad_w2 = int(math.ceil((filter_width - 1)/2))
        return (pad_h1, pad_h2), (pad_w1, pad_w2)


def get_im2col_indices(images_shape, filter_shape, padding, stride=1):
    batch_size, channels, height, width = images_shape
    filter_height, filter_width = filter_shape
    pad_h, pad_w = padding
    out_height = int((height + np.sum(pad_h) - filter_height) / stride + 1)
    out_width = int((width + np.sum(pad_w) - filter_width) / stride + 1)
    i0 = np.repeat(np.arange(filter_height), filter_width)
    i0 = np.tile(i0, channels)
    i1 = stride * np.repeat(np.arange(out_height), out_width)
    j0 = np.tile(np.arange(filter_width), filter_height * channels)
    j1 = stride * np.tile(np.arange(out_width), out_height)
    i = i0.reshape(-1, 1) + i1.reshape(1, -1)
    j = j0.reshape(-1, 1) + j1.reshape(1, -1)
    k = np.repeat(np.arange(channels), filter_height * filter_width).reshape(-1, 1)
    return (k, i, j)


def image_to_column(images, filter_shape, stride, output_shape='same'):
    filter_height, filter_width = filter_shape
    pad_h, pad_w = determine_padding(filter_shape, output_shape)
    images_padded = np.pad(images, ((0, 0), (0, 0), pad_h, pad_w), mode='constant')
    k, i, j = get_im2col_indices(images.shape, filter_shape, (pad_h, pad_w), stride)
    cols = images_padded[:, k, i, j]
    channels = images.shape[1]
    cols = cols.transpose(1, 2, 0).reshape(filter_height * filter_width * channels, -1)
    return cols


def column_to_image(cols, images_shape, filter_shape, stride, output_shape='same'):
    batch_size, channels, height, width = images_shape
    pad_h, pad_w = determine_padding(filter_shape, output_shape)
    height_padded = height + np.sum(pad_h)
    width_padded = width + np.sum(pad_w)
    images_padded = np.zeros((batch_size, channels, height_padded, width_padded))
    k, i, j = get_im2col_indices(images_shape, filter_shape, (pad_h, pad_w), stride)
    cols = cols.reshape(channels * np.prod(filter_shape), -1, batch_size)
    cols = cols.transpose(2, 0, 1)
    np.add.at(images_padded, (slice(None), k, i, j), cols)
    return images_padded[:, :, pad_h[0]:height+pad_h[0], pad_w[0]:width+pad_w[0]]


class Conv2D():
    def __init__(self, n_filters, filter_shape, input_shape, rng, padding='same', stride=1):
        self.n_filters, self.filter_shape = n_filters, filter_shape
        self.padding, self.stride, self.input_shape = padding, stride, input_shape
        filter_height, filter_width = self.filter_shape
        channels = self.input_shape[0]
        limit = 1 / math.sqrt(np.prod(self.filter_shape))
        self.W = rng.uniform(-limit, limit,
                             size=(self.n_filters, channels, filter_height, filter_width))
        self.w0 = np.zeros((self.n_filters, 1))

    def forward_pass(self, X, training=True):
        batch_size, channels, height, width = X.shape
        self.layer_input = X
        self.X_col = image_to_column(X, self.filter_shape, stride=self.stride,
                                     output_shape=self.padding)
        self.W_col = self.W.reshape((self.n_filters, -1))
        output = self.W_col.dot(self.X_col) + self.w0
        output = output.reshape(self.output_shape() + (batch_size, ))
        return output.transpose(3, 0, 1, 2)

    def output_shape(self):
        channels, height, width = self.input_shape
        pad_h, pad_w = determine_padding(self.filter_shape, output_shape=self.padding)
        output_height = (height + np.sum(pad_h) - self.filter_shape[0]) / self.stride + 1
        output_width = (width + np.sum(pad_w) - self.filter_shape[1]) / self.stride + 1
        return self.n_filters, int(output_height), int(output_width)


class BatchNormalization():
    def __init__(self, input_shape, optimizer, momentum=0.99):
        self.momentum = momentum
        self.eps = 0.01
        self.running_mean = None
        self.running_var = None
        self.gamma, self.beta = np.ones(input_shape), np.zeros(input_shape)
        self.gamma_opt, self.beta_opt = copy.copy(optimizer), copy.copy(optimizer)

    def forward_pass(self, X, training=True):
        if self.running_mean is None:
            self.running_mean = np.mean(X, axis=0)
            self.running_var = np.var(X, axis=0)
        if training:
            mean = np.mean(X, axis=0)
            var = np.var(X, axis=0)
            self.running_mean = self.momentum * self.running_mean + (1 - self.momentum) * mean
            self.running_var = self.momentum * self.running_var + (1 - self.momentum) * var
        else:
            mean = self.running_mean
            var = self.running_var
        self.X_centered = X - mean
        self.stddev_inv = 1 / np.sqrt(var + self.eps)
        X_norm = self.X_centered * self.stddev_inv
        output = self.gamma * X_norm + self.beta
        return output


class MaxPooling2D():
    def __init__(self, input_shape, pool_shape=(2, 2), stride=2):
        self.input_shape, self.pool_shape, self.stride = input_shape, pool_shape, stride

    def forward_pass(self, X, training=True):
        self.layer_input = X
        batch_size, channels, height, width = X.shape
        _, out_height, out_width = self.output_shape()
        X = X.reshape(batch_size*channels, 1, height, width)
        X_col = image_to_column(X, self.pool_shape, self.stride, 'valid')
        arg_max = np.argmax(X_col, axis=0).flatten()
        output = X_col[arg_max, range(arg_max.size)]
        self.cache = arg_max
        output = output.reshape(out_height, out_width, batch_size, channels)
        return output.transpose(2, 3, 0, 1)

    def output_shape(self):
        channels, height, width = self.input_shape
        out_height = (height - self.pool_shape[0]) / self.stride + 1
        out_width = (width - self.pool_shape[1]) / self.stride + 1
        assert out_height % 1 == 0
        assert out_width % 1 == 0
        return channels, int(out_height), int(out_width)


class UpSampling2D():
    def __init__(self, size=(2, 2)):
        self.size = size

    def forward_pass(self, X, training=True):
        self.prev_shape = X.shape
        return X.repeat(self.size[0], axis=2).repeat(self.size[1], axis=3)


class ConstantPadding2D():
    def __init__(self, padding, padding_value=0):
        self.padding = ((padding[0], padding[0]), (padding[1], padding[1]))
        self.padding_value = padding_value

    def forward_pass(self, X, training=True):
        return np.pad(X, pad_width=((0, 0), (0, 0), self.padding[0], self.padding[1]),
                      mode="constant", constant_values=self.padding_value)


# -- supervised_learning/logistic_regression.py, unsupervised_learning/principal_... ----------

def logistic_regression_fit(X, y, param, learning_rate=0.1, n_iterations=40):
    """LogisticRegression.fit's gradient descent, its parameters passed in."""
    sigmoid = Sigmoid()
    for i in range(n_iterations):
        y_pred = sigmoid(X.dot(param))
        param -= learning_rate * -(y - y_pred).dot(X)
    return param


def pca_transform(X, n_components):
    covariance_matrix = calculate_covariance_matrix(X)
    eigenvalues, eigenvectors = np.linalg.eig(covariance_matrix)
    idx = eigenvalues.argsort()[::-1]
    eigenvalues = eigenvalues[idx][:n_components]
    eigenvectors = np.atleast_1d(eigenvectors[:, idx])[:, :n_components]
    X_transformed = X.dot(eigenvectors)
    return X_transformed


# -- the checks ------------------------------------------------------------------------------

def _state(value, seen=None):
    """The arrays and numbers an object holds (its attributes, and its attributes' objects')."""
    seen = set() if seen is None else seen
    if isinstance(value, (np.ndarray, np.generic, int, float, type(None))):
        return [value]
    if id(value) in seen or not hasattr(value, "__dict__"):
        return []
    seen.add(id(value))
    return [leaf for name, item in vars(value).items() for leaf in [name, *_state(item, seen)]]


def check_method(make, method, arguments, calls=3):
    """kiln.compile(obj.method) agrees with the method of an equal object run eagerly, on the
    results and on the object's arrays after each call."""
    mine, theirs = make(np.random.default_rng(7)), make(np.random.default_rng(7))
    compiled = kiln.compile(getattr(mine, method))
    for call in range(calls):
        got = compiled(*copy.deepcopy(arguments))
        expected = getattr(theirs, method)(*copy.deepcopy(arguments))
        _assert_same(got, expected, f"call {call}: result")
        state, expected_state = _state(mine), _state(theirs)
        assert [type(leaf) for leaf in state] == [type(leaf) for leaf in expected_state]
        for name, (a, b) in enumerate(zip(state, expected_state)):
            if not isinstance(b, str):
                _assert_same(a, b, f"call {call}: attribute leaf {name}")
    return compiled


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_functions(name):
    x = np.random.default_rng(3).normal(size=(16, 5))
    activation = ACTIVATIONS[name]()
    check_program(lambda x: activation(x), (x,))
    check_program(activation.gradient, (x,))


@pytest.mark.parametrize("loss", [SquareLoss, CrossEntropy])
def test_losses(loss):
    rng = np.random.default_rng(4)
    y, p = np.eye(4)[rng.integers(0, 4, 12)], Softmax()(rng.normal(size=(12, 4)))
    check_program(loss().loss, (y, p))
    check_program(loss().gradient, (y, p))


def test_cross_entropy_accuracy():
    rng = np.random.default_rng(4)
    check_program(CrossEntropy().acc, (np.eye(4)[rng.integers(0, 4, 12)], rng.random((12, 4))))


OPTIMIZERS = [StochasticGradientDescent, Adagrad, RMSprop, Adam]


@pytest.mark.parametrize("optimizer", OPTIMIZERS, ids=lambda kind: kind.__name__)
def test_optimizer_steps_compiled_as_bound_methods(optimizer):
    rng = np.random.default_rng(5)
    compiled = check_method(lambda _: optimizer(), "update",
                            (rng.normal(size=(6, 3)), rng.normal(size=(6, 3))), calls=4)
    report = kiln.explain(compiled)(np.ones((6, 3)), np.ones((6, 3)))
    assert report.graph_break_count == 0, report.break_reasons


@pytest.mark.parametrize("optimizer", OPTIMIZERS, ids=lambda kind: kind.__name__)
def test_an_optimizer_passed_in_starts_from_its_empty_state(optimizer):
    # Its state is None until the first step: the trace stored its zeros into the object it
    # was handed, and the eager run that followed found them instead of None, skipped the
    # initialisation and handed back tracers (kiln._pytree.Contents)
    rng = np.random.default_rng(5)
    w, g = rng.normal(size=(6, 3)), rng.normal(size=(6, 3))
    mine, theirs = optimizer(), optimizer()
    compiled = kiln.compile(lambda optimizer, w, g: optimizer.update(w, g))
    for call in range(3):
        _assert_same(compiled(mine, w, g), theirs.update(w, g), f"call {call}")
        for a, b in zip(_state(mine), _state(theirs)):
            if not isinstance(b, str):
                _assert_same(a, b, f"call {call}: state")


def _dense(rng):
    return Dense(8, (5,), Adam(), rng)


def _batch_norm(rng):
    return BatchNormalization((6,), RMSprop())


LAYERS = {
    "dense": (_dense, (5,), None),
    "conv2d_same": (lambda rng: Conv2D(3, (3, 3), (2, 6, 6), rng), (2, 6, 6), None),
    "conv2d_valid_stride2": (lambda rng: Conv2D(2, (3, 3), (2, 7, 7), rng, 'valid', 2),
                             (2, 7, 7), None),
    "rnn": (lambda rng: RNN(6, (5, 4), rng), (5, 4), None),
    "batch_norm": (_batch_norm, (6,), None),
    "batch_norm_eval": (_batch_norm, (6,), False),
    "max_pooling": (lambda rng: MaxPooling2D((2, 6, 6)), (2, 6, 6), None),
    "up_sampling": (lambda rng: UpSampling2D(), (2, 3, 3), None),
    "padding": (lambda rng: ConstantPadding2D((1, 2), 0.5), (2, 3, 3), None),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_forward_passes(name):
    make, shape, training = LAYERS[name]
    X = np.random.default_rng(6).normal(size=(3, *shape))
    check_method(make, "forward_pass", (X,) if training is None else (X, training))


def test_image_to_column_and_back():
    rng = np.random.default_rng(8)
    check_program(lambda X: image_to_column(X, (3, 3), 1, 'same'), (rng.normal(size=(2, 2, 5, 5)),))
    check_program(lambda cols: column_to_image(cols, (2, 2, 5, 5), (3, 3), 1, 'same'),
                  (rng.normal(size=(18, 50)),))


UTILS = {
    "mean_squared_error": (mean_squared_error, lambda r: (r.random(20), r.random(20))),
    "variance": (calculate_variance, lambda r: (r.normal(size=(20, 4)),)),
    "std_dev": (calculate_std_dev, lambda r: (r.normal(size=(20, 4)),)),
    "covariance": (calculate_covariance_matrix, lambda r: (r.normal(size=(20, 4)),)),
    "covariance_of_two": (calculate_covariance_matrix,
                          lambda r: (r.normal(size=(20, 4)), r.normal(size=(20, 3)))),
    "correlation": (calculate_correlation_matrix, lambda r: (r.normal(size=(20, 4)),)),
    "accuracy": (accuracy_score, lambda r: (r.integers(0, 3, 20), r.integers(0, 3, 20))),
    "polynomial_features": (polynomial_features, lambda r: (r.normal(size=(10, 3)), 3)),
    "normalize": (normalize, lambda r: (r.normal(size=(10, 3)),)),
    "normalize_columns": (normalize, lambda r: (r.normal(size=(10, 3)), 0)),
    "standardize": (standardize, lambda r: (r.normal(size=(10, 3)),)),
    "to_categorical": (to_categorical, lambda r: (r.integers(0, 4, 10), 4)),
    "make_diagonal": (make_diagonal, lambda r: (r.normal(size=6),)),
    "polynomial_kernel_matrix": (kernel_matrix, lambda r: (r.normal(size=(6, 3)),
                                                           polynomial_kernel(3, 1.0))),
    "rbf_kernel_matrix": (kernel_matrix, lambda r: (r.normal(size=(6, 3)), rbf_kernel(0.5))),
    "logistic_regression_fit": (logistic_regression_fit, lambda r: (
        r.normal(size=(20, 3)), (r.random(20) > 0.5).astype(float), r.uniform(-0.5, 0.5, 3))),
    "pca": (pca_transform, lambda r: (r.normal(size=(20, 4)) @ r.normal(size=(4, 4)), 2)),
}


@pytest.mark.parametrize("name", sorted(UTILS))
def test_utils_and_models(name):
    function, make = UTILS[name]
    check_program(function, make(np.random.default_rng(9)))


def test_kernel_matrix_loops_are_captured():
    X = np.random.default_rng(9).normal(size=(6, 3))
    report = kiln.explain(kiln.compile(kernel_matrix))(X, rbf_kernel(0.5))
    assert report.graph_break_count == 0, report.break_reasons
    assert [loop.kind for loop in report.loops] == ["loop", "loop"]


def test_the_rnn_time_loop_is_one_loop():
    # its body writes self.state_input[:, t], self.states[:, t] and self.outputs[:, t]: the
    # loop was unrolled, a graph of 474 ops for 20 steps (kiln._loop_attribute_targets)
    layer = RNN(6, (5, 4), np.random.default_rng(7))
    report = kiln.explain(kiln.compile(layer.forward_pass))(np.ones((3, 5, 4)))
    assert [loop.kind for loop in report.loops] == ["loop"], report.loops
