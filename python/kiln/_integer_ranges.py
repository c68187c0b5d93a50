"""NumPy 2's range checks of Python ints cast to integer dtypes (NEP 50: int8 array + 300
raises OverflowError): at trace time for a Python int, when the graph runs for a traced one (a
captured loop's counter, a dynamic int argument)."""
import numpy as np

from . import _kiln
from ._graph_breaks import user_location

_NUMPY2 = np.lib.NumpyVersion(np.__version__) >= "2.0.0"


def check_fits(value, dtype, op_name):
    """NumPy 2 refuses a Python int that the integer loop type cannot hold."""
    if dtype.kind in "iu" and isinstance(value, int) and not isinstance(value, bool):
        info = np.iinfo(dtype)
        if value < info.min or value > info.max:
            raise OverflowError(f"Python integer {value} out of bounds for {dtype.name} "
                                f"(in {op_name} at {user_location()})")


def check_traced_int_fits(value, dtype, op_name):
    """check_fits for a traced Python int (a loop's counter, a dynamic int argument), at run
    time unless its known range fits. NumPy 1.x promotes by value instead: nothing to raise."""
    if not _NUMPY2 or dtype.kind not in "iu" or dtype == np.int64:
        return
    info = np.iinfo(dtype)
    known = value._range
    if known is not None and info.min <= known[0] and known[1] <= info.max:
        return
    _kiln.check_python_int_fits(value.tensor, int(info.min), min(int(info.max), 2**63 - 1),
                                dtype.name, op_name)
