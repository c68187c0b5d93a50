"""What NumPy's functions and methods, Python's builtins and a container's methods do to what
they are given: the allow-lists kiln._loop_aliases (and kiln._helper_writes, for the helpers
called when a loop runs) read a call by. A call named in none of them may write all it is
given."""
import inspect

import numpy as np

from ._loop_rewrite_parts import _dotted_name as _dotted

# Builtins that neither write their arguments nor return them (or an item of them).
FRESH_BUILTINS = frozenset((
    "len", "range", "print", "float", "int", "bool", "complex", "abs", "round", "str", "repr",
    "format", "isinstance", "issubclass", "type", "any", "all", "divmod", "pow", "hash", "id",
    "hasattr", "callable", "ord", "chr", "bin", "hex", "oct", "ascii"))
# Builtins that write nothing but may return an argument, an item of one, or a container
# holding its items (min(rows), zip(x, y), list(rows), sorted(rows)).
HOLDING_BUILTINS = frozenset((
    "min", "max", "sum", "zip", "enumerate", "reversed", "sorted", "list", "tuple", "dict",
    "set", "frozenset", "iter", "next", "getattr", "slice", "super"))
# Builtins that may read or write any local (eval("x.fill(0)")): everything is written.
ANY_NAME_BUILTINS = frozenset(("eval", "exec", "locals", "vars", "globals"))

# NumPy functions (np.<name>, numpy.<name>; submodules dotted) that do not write their
# arguments (except an out= one) and return fresh arrays. Ufuncs are found by their type.
NUMPY_FRESH = frozenset((
    "sum", "mean", "std", "var", "max", "min", "amax", "amin", "nanmax", "nanmin", "nansum",
    "nanmean", "nanstd", "nanvar", "nanprod", "nanargmax", "nanargmin", "nanmedian",
    "nanpercentile", "nanquantile", "nancumsum", "nancumprod", "argmax", "argmin", "prod",
    "cumsum", "cumprod", "cumulative_sum", "cumulative_prod", "ptp", "median", "percentile",
    "quantile", "average", "all", "any", "allclose", "isclose", "array_equal", "array_equiv",
    "count_nonzero", "nonzero", "flatnonzero", "argwhere", "where", "select", "clip", "round",
    "around", "fix", "sort", "argsort", "lexsort", "partition", "argpartition", "unique",
    "searchsorted", "histogram", "histogram2d", "histogramdd", "histogram_bin_edges",
    "bincount", "digitize", "interp", "convolve", "correlate", "polyfit", "polyval", "poly",
    "roots", "polyder", "polyint", "diff", "ediff1d", "gradient", "trapz", "trapezoid",
    "cross", "dot", "vdot", "inner", "outer", "tensordot", "kron", "trace", "tril",
    "triu", "diagflat", "vander", "tile", "repeat", "pad", "concatenate", "concat",
    "stack", "vstack", "hstack", "dstack", "column_stack", "row_stack", "block", "append",
    "insert", "delete", "resize", "roll", "copy", "zeros", "ones", "empty", "full",
    "zeros_like", "ones_like", "empty_like", "full_like", "arange", "linspace", "logspace",
    "geomspace", "eye", "identity", "tri", "indices", "take", "take_along_axis", "choose",
    "compress", "extract", "cov", "corrcoef", "shape", "size", "ndim", "result_type",
    "promote_types", "can_cast", "dtype", "finfo", "iinfo", "isscalar", "iscomplexobj",
    "isrealobj", "issubdtype", "broadcast_shapes", "errstate", "array2string", "array_repr",
    "array_str", "angle", "unwrap", "sinc", "i0", "setdiff1d", "intersect1d",
    "union1d", "in1d", "isin", "triu_indices", "tril_indices", "diag_indices",
    "unravel_index", "ravel_multi_index", "packbits", "unpackbits", "meshgrid", "array",
    "fromiter",
    "linalg.norm", "linalg.inv", "linalg.pinv", "linalg.solve", "linalg.det", "linalg.slogdet",
    "linalg.eig", "linalg.eigh", "linalg.eigvals", "linalg.eigvalsh", "linalg.svd",
    "linalg.svdvals", "linalg.qr", "linalg.cholesky", "linalg.lstsq", "linalg.matrix_rank",
    "linalg.matrix_power", "linalg.multi_dot", "linalg.cond", "linalg.tensorsolve",
    "linalg.tensorinv", "linalg.outer", "linalg.cross", "linalg.vector_norm",
    "linalg.matrix_norm", "linalg.trace", "linalg.vecdot", "linalg.tensordot",
    "fft.fft", "fft.ifft", "fft.fft2", "fft.ifft2", "fft.fftn", "fft.ifftn", "fft.rfft",
    "fft.irfft", "fft.rfft2", "fft.irfft2", "fft.rfftn", "fft.irfftn", "fft.hfft", "fft.ihfft",
    "fft.fftfreq", "fft.rfftfreq", "fft.fftshift", "fft.ifftshift",
    "random.rand", "random.randn", "random.randint", "random.random", "random.random_sample",
    "random.uniform", "random.normal", "random.standard_normal", "random.choice",
    "random.permutation", "random.exponential", "random.poisson", "random.binomial",
    "random.beta", "random.gamma", "random.lognormal", "random.multivariate_normal",
    "random.seed", "random.default_rng", "random.RandomState"))
# NumPy functions that write nothing but may return their argument or a view of it (np.diag
# of a matrix is a read-only view, which sees writes to it; einsum("ij->ji", a) a view).
NUMPY_VIEWS = frozenset((
    "asarray", "asanyarray", "ascontiguousarray", "asfortranarray", "asarray_chkfinite",
    "require", "reshape", "ravel", "transpose", "swapaxes", "moveaxis", "rollaxis", "squeeze",
    "expand_dims", "broadcast_to", "broadcast_arrays", "atleast_1d", "atleast_2d",
    "atleast_3d", "split", "array_split", "hsplit", "vsplit", "dsplit", "unstack", "diagonal",
    "flip", "fliplr", "flipud", "rot90", "real", "imag", "matrix_transpose", "permute_dims",
    "linalg.diagonal", "linalg.matrix_transpose", "lib.stride_tricks.as_strided",
    "lib.stride_tricks.sliding_window_view", "diag", "einsum", "real_if_close", "frombuffer"))
# NumPy functions that write their first argument, and only it.
NUMPY_WRITE_FIRST = frozenset((
    "copyto", "put", "place", "putmask", "fill_diagonal", "put_along_axis", "random.shuffle"))

# Methods (of arrays, random generators, strings) that write nothing and return a fresh value
# (`copy` of a list the function builds holds its items). A user's class with a method of
# one of these names is taken at its word.
FRESH_METHODS = frozenset((
    "sum", "mean", "std", "var", "max", "min", "argmax", "argmin", "prod", "cumsum", "cumprod",
    "ptp", "dot", "all", "any", "astype", "tolist", "item", "round", "clip", "nonzero",
    "trace", "conj", "conjugate", "flatten", "argsort", "argpartition", "searchsorted",
    "count", "index", "tobytes", "repeat", "take", "compress", "choose", "copy",
    "normal", "uniform", "random", "integers", "standard_normal", "choice", "permutation",
    "exponential", "poisson", "binomial", "beta", "gamma", "lognormal", "standard_exponential",
    "multivariate_normal", "rand", "randn", "randint", "random_sample",
    "format", "join", "startswith", "endswith", "lower", "upper", "strip"))
# Methods that write nothing but may return the receiver, a view or an item of it.
VIEW_METHODS = frozenset((
    "reshape", "ravel", "transpose", "swapaxes", "squeeze", "view", "diagonal", "get", "items",
    "values", "keys", "getfield", "__getitem__", "split"))
# A list's, set's and dict's methods that change the container, not the arrays in it: the
# receiver's items then may be the arguments (append, extend, ...); pop returns one.
CONTAINER_METHODS = frozenset((
    "append", "extend", "insert", "add", "update", "setdefault", "pop", "popitem", "remove",
    "clear", "reverse", "discard"))
# The position of the out argument of those methods (x.sum(0, None, y) writes y).
METHOD_OUTS = {
    "sum": 2, "mean": 2, "std": 2, "var": 2, "prod": 2, "cumsum": 2, "cumprod": 2, "max": 1,
    "min": 1, "argmax": 1, "argmin": 1, "all": 1, "any": 1, "ptp": 1, "round": 1, "clip": 2,
    "dot": 1, "take": 2, "choose": 1, "compress": 2, "trace": 4, "random": 2,
    "standard_normal": 2, "standard_exponential": 3}
UFUNC_METHODS = frozenset(("reduce", "accumulate", "reduceat", "outer"))
MOST_CALL_DEPTH = 8  # user functions followed through their calls


def numpy_object(path):
    """The object np.<path> names in NumPy, or None."""
    value = np
    for part in path.split("."):
        value = getattr(value, part, None)
        if value is None:
            return None
    return value


_outs = {}


def positional_out(path):
    """The position of np.<path>'s out argument where it may be given by position (np.sum's
    fourth, np.dot's third), None where it has none; 2 where its signature is unknown."""
    if path not in _outs:
        try:
            parameters = list(inspect.signature(numpy_object(path)).parameters.values())
            _outs[path] = next((k for k, p in enumerate(parameters) if p.name == "out" and (
                p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))), None)
        except (TypeError, ValueError):
            _outs[path] = 2
    return _outs[path]


def numpy_path(func):
    """"linalg.norm" of np.linalg.norm (or numpy.linalg.norm), None for other callees."""
    name = _dotted(func)
    for prefix in ("np.", "numpy."):
        if name.startswith(prefix):
            return name[len(prefix):]
    return None
