"""The values captured loops carry (kiln._loop_capture, kiln._loop_appends): their types, and
the failure that makes a loop run as Python instead."""
import numpy as np

from ._tracer import TracedArray, backend, cast


class CaptureFailed(Exception):
    """The loop or branch cannot be captured: it runs as Python (the reason is recorded)."""


def is_number(value):
    return isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating))


def is_python_number(value):
    return type(value) is int or type(value) is float


def python_type(value):
    """int or float where `value` is (or, traced, stands for) a Python number, else None."""
    if isinstance(value, TracedArray):
        return value._weak
    return type(value) if is_python_number(value) else None


def type_of(tensor):
    return tensor.dtype, tuple(tensor.shape)


def widened(placeholder, tensor, name):
    """The carried type when one iteration turns `placeholder`'s type into `tensor`'s: NumPy's
    promotion of the two, broadcast shapes; refused when it is not the body's own result."""
    dtype = np.result_type(np.dtype(placeholder.dtype), np.dtype(tensor.dtype)).name
    try:
        shape = np.broadcast_shapes(tuple(placeholder.shape), tuple(tensor.shape))
    except ValueError:
        shape = None
    if dtype != tensor.dtype or shape != tuple(tensor.shape):
        raise CaptureFailed(f"the loop changes the shape or dtype of `{name}` from "
                            f"{placeholder.dtype}{tuple(placeholder.shape)} to "
                            f"{tensor.dtype}{tuple(tensor.shape)}")
    return dtype, shape


def retyped(context, tensor, dtype, shape):
    tensor = cast(tensor, dtype)
    if tuple(tensor.shape) != tuple(shape):
        tensor = backend().broadcast_to(tensor, list(shape))
    return tensor
