"""np.linalg.solve, inv and det of float matrices, traced.

On the CPU, solve and inv are the graph's solve op: LAPACK's gesv (src/extern/solve.h), on
column-major copies as NumPy's own call makes them, any size, batched over leading dimensions as
NumPy is (b a vector only where it is 1-D, NumPy 2's rule). Before, they were the loops below,
and eager past MOST_ROWS rows: heat_implicit's 300-point rod ran a graph per time step.

det, and solve and inv on a GPU (no LAPACK there), are an LU factorisation with partial pivoting
(LAPACK's getrf: in each column the row of largest magnitude, the first of equal ones, swapped
up) as one loop node, then the two triangular solves as loop nodes. They were graph breaks: the
implicit heat equation, which solves its tridiagonal system every time step, ran a graph per
step (100 steps of a 50-point rod: 1.7 s the first call, then 35-50 ms against NumPy's 1.4 ms,
until kiln gave up and ran it eagerly). The loops update whole rows and columns (positions
outside the active block masked), O(n^3) per solve, which LAPACK's blocked kernels beat past
MOST_ROWS: larger matrices, stacks of matrices, complex and other dtypes, and what NumPy rejects
(shapes) run eagerly, as before. A singular matrix (an exact zero pivot, as LAPACK's info
reports) raises NumPy's np.linalg.LinAlgError "Singular matrix" when the graph runs (a
ValueError that was not a LinAlgError escaped the user's `except np.linalg.LinAlgError`); det
gives 0 there, as NumPy's does.
"""
import numpy as np

from ._numpy_functions import _as_traced, _k, _result
from ._numpy_math import _eager, _scalar_result
from ._tracer import TracedArray
from ._ufunc_loops import _loop

MOST_ROWS = 128


def _float_dtype(*arrays):
    """NumPy's linalg dtype for these operands (float32 only if all are float32; integers and
    bools as float64), or None where kiln leaves the call to NumPy (complex, float16...)."""
    dtype = np.result_type(*(a.dtype for a in arrays))
    if dtype.kind in "biu":
        return np.dtype(np.float64)
    return dtype if dtype in (np.float32, np.float64) else None


def _array(value):
    """A traced array as it is, anything else as an ndarray."""
    return value if isinstance(value, TracedArray) else np.asarray(value)


def _one_matrix(context, a):
    """(the traced square matrix of inv's and det's argument, its linalg dtype), or (None,
    None) where kiln leaves the call to NumPy."""
    a_array = _array(a)
    dtype = _float_dtype(a_array)
    return (None, None) if dtype is None else (_square(context, a_array, dtype), dtype)


def _square(context, a, dtype):
    """a as a traced (n, n) matrix of dtype, or None (eager) where kiln does not factor it."""
    if a.ndim != 2 or a.shape[0] != a.shape[1] or not 1 <= a.shape[0] <= MOST_ROWS:
        return None
    if not isinstance(a, TracedArray):
        a = context.lift(np.asarray(a))
    return a.astype(dtype)  # a copy of its own: the factorisation updates it in place


def _factor(context, a):
    """(lu, permutation, sign of the permutation, singular flag) of the traced (n, n) matrix a:
    L's multipliers below the diagonal (unit diagonal), U on and above it, rows permuted."""
    n = a.shape[0]
    rows = np.arange(n)

    def step(k, state):
        lu = state["lu"]
        column = np.where(rows >= k, np.abs(lu[:, k]), -1.0)
        p = np.argmax(column)
        row_k, row_p = lu[k].copy(), lu[p].copy()
        lu[p] = row_k
        lu[k] = row_p
        order = state["order"]
        order_k, order_p = order[k].copy(), order[p].copy()
        order[p] = order_k
        order[k] = order_p
        state["sign"] = np.where(p != k, -state["sign"], state["sign"])
        pivot = lu[k, k]
        state["singular"] = state["singular"] | (pivot == 0)
        below = rows > k
        factors = np.where(below, lu[:, k] / np.where(pivot == 0, 1, pivot), 0)
        # only the active block is updated: the rows at and above k are done (LAPACK's getf2
        # never touches them again), and a 0 factor times an inf of row k made them NaN
        update = np.where(below[:, None] & (rows[None, :] > k),
                          factors[:, None] * lu[k][None, :], 0)
        lu[...] = np.where(below[:, None] & (rows[None, :] == k), factors[:, None], lu - update)

    state = {"lu": a, "order": context.lift(np.arange(n)),
             "sign": context.lift(np.asarray(1.0, a.dtype)),
             "singular": context.lift(np.asarray(False))}
    _loop(context, n, step, state)
    return state["lu"], state["order"], state["sign"], state["singular"]


def _substitute(context, lu, y):
    """x with L U x = y (y: (n,) or (n, m)): forward then backward substitution, one loop each."""
    n = lu.shape[0]
    rows = np.arange(n)

    def dot(mask, weights, y):  # a fused reduction: a library product per step costs more
        # masked after the product: a masked-out 0 weight times an inf or NaN of y is NaN
        shape = (n,) + (1,) * (y.ndim - 1)
        return np.sum(np.where(mask.reshape(shape), weights.reshape(shape) * y, 0), axis=0)

    def forward(k, state):
        state["y"][k] = state["y"][k] - dot(rows < k, lu[k], state["y"])

    def backward(i, state):
        k = n - 1 - i
        state["y"][k] = (state["y"][k] - dot(rows > k, lu[k], state["y"])) / lu[k, k]

    state = {"y": y}
    _loop(context, n, forward, state)
    _loop(context, n, backward, state)
    return state["y"]


def _check_singular(context, singular, op):
    """NumPy's error for an exact zero pivot, raised when the graph runs."""
    nothing = context.lift(np.zeros(0, np.int64))  # the message names no values
    _k().check_flag(singular.tensor, nothing.tensor, "Singular matrix", "", op,
                    error="LinAlgError")


def _on_cpu(context):
    """Whether the graph runs on the CPU, where LAPACK computes the solve op."""
    driver = context.driver
    return driver is not None and getattr(driver, "options", {}).get("device", "cpu") == "cpu"


_NUMPY_1 = np.lib.NumpyVersion(np.__version__) < "2.0.0"


def _systems(a, b=None):
    """Whether a (.., n, n), n >= 1, and b ((n,) or (.., n, k), k >= 1, batch dimensions that
    broadcast with a's) are systems the solve op takes as NumPy would (NumPy 2's rule: a 1-D b
    is a vector; on NumPy 1.x the calls its rule reads otherwise are left to it)."""
    if a.ndim < 2 or a.shape[-1] != a.shape[-2] or a.shape[-1] == 0:
        return False
    if b is None:
        return True
    if _NUMPY_1 and (b.ndim == a.ndim - 1) != (b.ndim == 1):
        return False  # NumPy 1.x reads b as vectors iff b.ndim == a.ndim - 1: its own call
    if b.ndim == 1:
        return b.shape[0] == a.shape[-1]
    if b.shape[-2] != a.shape[-1] or b.shape[-1] == 0:
        return False
    try:
        np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        return False
    return True


def _library_solve(context, a, b):
    """x with a x = b by the solve op (LAPACK's gesv)."""
    a, b = _as_traced(context, a), _as_traced(context, b)
    context.raising_ops += 1  # LAPACK's singular matrix, as the graph runs
    return _result(context, _k().solve(a.tensor, b.tensor), scalar=False)


def solve(context, a, b):
    a_array, b_array = _array(a), _array(b)
    dtype = _float_dtype(a_array, b_array)
    if dtype is not None and _on_cpu(context) and _systems(a_array, b_array):
        return _library_solve(context, a_array, b_array)
    matrix = None if dtype is None else _square(context, a_array, dtype)
    if matrix is None or b_array.ndim not in (1, 2) or b_array.shape[0] != matrix.shape[0]:
        return _eager(np.linalg.solve, "np.linalg.solve of a large, batched or non-float "
                      "system", a, b)
    lu, order, _, singular = _factor(context, matrix)
    _check_singular(context, singular, "linalg.solve")
    rhs = b_array if isinstance(b_array, TracedArray) else context.lift(b_array)
    return _substitute(context, lu, rhs.astype(dtype)[order])


def inv(context, a):
    a_array = _array(a)
    dtype = _float_dtype(a_array)
    if dtype is not None and _on_cpu(context) and _systems(a_array):
        return _library_solve(context, a_array, np.eye(a_array.shape[-1], dtype=dtype))
    matrix, dtype = _one_matrix(context, a)
    if matrix is None:
        return _eager(np.linalg.inv, "np.linalg.inv of a large, batched or non-float matrix", a)
    lu, order, _, singular = _factor(context, matrix)
    _check_singular(context, singular, "linalg.inv")
    identity = context.lift(np.eye(matrix.shape[0], dtype=dtype))
    return _substitute(context, lu, identity[order])


def det(context, a):
    matrix, _ = _one_matrix(context, a)
    if matrix is None:
        return _eager(np.linalg.det, "np.linalg.det of a large, batched or non-float matrix", a)
    lu, _, sign, singular = _factor(context, matrix)
    # NumPy's det is sign * exp(logdet), +0.0 for a singular matrix whatever the sign
    return _scalar_result(context, np.where(singular, 0, sign * np.prod(np.diagonal(lu))))


FUNCTIONS = {np.linalg.solve: solve, np.linalg.inv: inv, np.linalg.det: det}
