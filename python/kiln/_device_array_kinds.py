"""The device arrays kiln.wrap_numpy takes (kiln._wrap_numpy): which values are arrays on a CUDA
device (the CUDA Array Interface: torch, CuPy, Numba; DLPack: JAX), their layouts and streams,
and results given back as arrays of the caller's library."""
import sys

import numpy as np

from . import _kiln

_DLPACK_CUDA = 2  # DLPack's device type for CUDA memory


def _is_dlpack_array(value):
    """A DLPack producer on a CUDA device that has no CUDA Array Interface (a JAX array)."""
    describe = getattr(value, "__dlpack_device__", None)
    if describe is None or hasattr(value, "__cuda_array_interface__"):
        return False
    device = describe()
    return device[0] == _DLPACK_CUDA


def _is_device_array(value):
    if isinstance(value, np.ndarray):
        return False
    return hasattr(value, "__cuda_array_interface__") or _is_dlpack_array(value)


def _layout(value):
    """(dtype name, shape, element strides or [] when contiguous) of an array argument."""
    if isinstance(value, np.ndarray):
        array = value
        dtype, shape = array.dtype, list(array.shape)
        strides = [] if array.flags.c_contiguous else [s // array.itemsize for s in array.strides]
        return dtype.name, shape, strides
    if _is_dlpack_array(value):
        if _library_of(value) == "jax":  # always dense, row-major
            return np.dtype(value.dtype).name, list(value.shape), []
        return _kiln.device_array_layout(value)
    interface = value.__cuda_array_interface__
    dtype = np.dtype(interface["typestr"])
    shape = list(interface["shape"])
    strides = interface.get("strides")
    strides = [] if strides is None else [s // dtype.itemsize for s in strides]
    return dtype.name, shape, strides


def _stream_of(value):
    """The CUstream the caller's work on `value` is queued on (the CUDA Array Interface's
    convention: 1 is the legacy default stream, 2 the per-thread one)."""
    if _is_dlpack_array(value):
        return 0  # the legacy default stream, ordered after the producer's (kiln._wrap_numpy)
    stream = value.__cuda_array_interface__.get("stream")
    return 0 if stream is None else int(stream)


def _library_of(array):
    """The name of the library whose array `array` is ("jaxlib" arrays are JAX's)."""
    name = type(array).__module__.split(".")[0]
    return "jax" if name == "jaxlib" else name


def _as_library_array(result, like):
    """`result` (a kiln.CudaArray) as an array of `like`'s library, sharing its memory; that
    library is imported already, since `like` is one of its arrays."""
    name = _library_of(like)
    library = sys.modules.get(name)
    if library is not None and name == "torch":
        return library.as_tensor(result, device=like.device)
    if library is not None and name == "cupy":
        return library.asarray(result)
    return result  # kiln.CudaArray: both interfaces, for any other library
