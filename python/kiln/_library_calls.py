"""The calls of one compiled kiln.wrap_numpy signature again (a loop's calls), on one library's
arrays, guarded by the arrays' own attributes and run without the general path's tracing-side
bookkeeping (kiln._wrap_numpy._Wrapped.__call__ keeps the last one and tries it first):
TorchCall for torch CUDA tensors, JaxCall for JAX arrays."""
import functools
import importlib

import numpy as np

from ._device import torch_current_stream
from ._device_results import assembled
from ._result_pool import ResultPool


def _same_objects(values, others):
    """Whether the globals a function reads hold the objects they held at its trace."""
    if len(values) != len(others):
        return False
    for now, then in zip(values, others):
        if now is not then:
            return False
    return True


def _tensor_guard(torch, tensors):
    """Dynamo's C++ check of tensors against these ones (TensorGuards: the Python type, dispatch
    keys, which hold the device, autograd and the conjugate and negative bits, and the dtype,
    device index, requires_grad, sizes and strides), 0.4 us a call of one tensor where reading
    its attributes in Python took 2-3 (a slow host); None where this torch lacks it, or where a
    tensor requires grad (traced under no_grad: the check would then pass one that requires grad
    with grad mode on, whose call needs the differentiable path)."""
    if any(t.requires_grad for t in tensors):
        return None
    try:
        guards = importlib.import_module("torch._C._dynamo.guards")
        return guards.TensorGuards(*tensors,
                                   dynamic_dims_sizes=[list(t.shape) for t in tensors],
                                   dynamic_dims_strides=[list(t.stride()) for t in tensors])
    except (ImportError, AttributeError, TypeError, RuntimeError):
        return None


def _passes(guard, args):
    """Whether `args` pass a _tensor_guard (False for one that is not a tensor)."""
    try:
        return guard.check(*args)
    except TypeError:
        return False


class TorchCall:
    """The call of one compiled signature on torch CUDA tensors, as the torch backend calls kiln:
    the guard read from the tensors' attributes (the CUDA Array Interface's dictionaries cost
    several microseconds per tensor and call, in Python), the results written into pooled
    tensors (kiln/_result_pool.py), the work queued on torch's current stream."""

    def __init__(self, torch, compiled, single, output_dtypes, tensors, environment,
                 mutated=(), returns=None):
        self.compiled, self.single, self.tensor_type = compiled, single, torch.Tensor
        self.returns = returns  # the arguments and views it returns (kiln._device_results)
        self.environment = environment  # the values of the globals it was traced with
        self.mutated, self.copy = list(mutated), torch._foreach_copy_
        self.layouts = [(t.dtype, t.shape, t.stride(), t.device, t.is_complex())
                        for t in tensors]
        self.guard = _tensor_guard(torch, tensors)
        device = tensors[0].device
        self.pool = ResultPool(torch, compiled, list(zip(compiled.output_shapes, output_dtypes)),
                               device)
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        if raw is not None and device.index is not None:
            self.stream = functools.partial(raw, device.index)
        else:
            self.stream = functools.partial(torch_current_stream, torch, device)

    def matches(self, args, environment):
        """Whether `args` are plain torch tensors of this signature, none requiring grad nor a
        lazy view (_refuse_unreadable_tensors: a conjugate bit only on complex ones), and the
        globals the function reads hold the values (the same objects) it was traced with."""
        if len(args) != len(self.layouts) or not _same_objects(environment, self.environment):
            return False
        if self.guard is not None:
            return _passes(self.guard, args)
        for value, (dtype, shape, strides, device, complex_) in zip(args, self.layouts):
            if (type(value) is not self.tensor_type or value.requires_grad
                    or value.dtype != dtype or value.shape != shape
                    or value.stride() != strides or value.device != device
                    or value.is_neg() or (complex_ and value.is_conj())):
                return False
        return True

    def __call__(self, tensors):
        outputs, results = self.pool.take()
        self.compiled.run_tensors(tensors, [output.address for output in outputs], self.stream())
        if self.mutated:  # the arguments the function assigned into: their new values
            count = len(results) - len(self.mutated)
            self.copy([tensors[k] for k in self.mutated], results[count:])
            results = results[:count]
        if self.returns is not None:
            results = assembled(self.returns, results, tensors)
        return results[0] if self.single else tuple(results)


def host_call(torch, function, args, kwargs, mapped):
    """`function` (kiln.compile's, for the CPU) called on NumPy views of the torch CPU tensors
    among `args` and `kwargs` (`mapped(kinds, convert, tree)`: their leaves of `kinds`
    converted); its arrays returned as torch tensors over their memory, an argument returned as
    the caller's tensor itself, as NumPy returns it."""
    tensors = {}  # id of the NumPy view of each tensor -> (the view, the tensor)

    def as_numpy(tensor):
        array = tensor.detach().numpy()
        tensors[id(array)] = (array, tensor)
        return array

    def as_tensor(array):
        given = tensors.get(id(array))
        if given is not None and given[0] is array:
            return given[1]
        return torch.from_numpy(np.asarray(array))
    args, kwargs = mapped(torch.Tensor, as_numpy, (args, kwargs))
    return mapped((np.ndarray, np.generic), as_tensor, function(*args, **kwargs))


class HostTorchCall:
    """A call on torch CPU tensors again (kiln.wrap_numpy's kiln.compile of the function, on
    NumPy views of their memory; host_call): taken where its arguments are plain tensors of the
    same dtypes, shapes and strides, none requiring grad nor a lazy view (TorchCall's guard), so
    the general path's bookkeeping (the environment's staleness, the tensors' checks) is
    skipped; kiln.compile's own guards see the rest (48 us a call of a 0-d tensor, 20 now, on
    a slow 2-core host)."""

    def __init__(self, torch, function, tensors, mapped):
        self.torch, self.function, self.count, self.mapped = torch, function, len(tensors), mapped
        self.guard = _tensor_guard(torch, tensors)

    def matches(self, args, environment):
        return self.guard is not None and len(args) == self.count and _passes(self.guard, args)

    def __call__(self, tensors):
        arrays = [tensor.numpy() for tensor in tensors]  # (none requires grad: the guard)

        def as_tensor(array):
            for argument, tensor in zip(arrays, tensors):
                if array is argument:  # an argument returned: the caller's tensor itself
                    return tensor
            return self.torch.from_numpy(np.asarray(array))
        result = self.function(*arrays)
        if type(result) is np.ndarray or isinstance(result, np.generic):
            return as_tensor(result)
        return self.mapped((np.ndarray, np.generic), as_tensor, result)


class JaxCall:
    """The call of one compiled signature on JAX arrays: the guard read from the arrays' type,
    dtype, shape and sharding; the arrays read by DLPack, exported for kiln's stream and kept
    until kiln's reads are done (src/python/cuda_bindings.cpp); the results made JAX arrays by
    `importer` (jax_importer)."""

    def __init__(self, compiled, single, arrays, environment, importer):
        self.compiled, self.single, self.importer = compiled, single, importer
        self.environment = environment  # the values of the globals it was traced with
        self.array_type = type(arrays[0])
        self.layouts = [(a.dtype, a.shape, a.sharding) for a in arrays]

    def matches(self, args, environment):
        """Whether `args` are JAX arrays of this signature on the same devices, and the globals
        the function reads hold the values (the same objects) it was traced with."""
        if len(args) != len(self.layouts) or not _same_objects(environment, self.environment):
            return False
        for value, (dtype, shape, sharding) in zip(args, self.layouts):
            if (type(value) is not self.array_type or value.dtype != dtype
                    or value.shape != shape or value.sharding != sharding):
                return False
        return True

    def __call__(self, arrays):
        results = [self.importer(result) for result in self.compiled.run(list(arrays), stream=0)]
        return results[0] if self.single else tuple(results)


def jax_importer(jax, like, dtype_names):
    """A function taking a kiln.CudaArray result to a JAX array on `like`'s device, sharing its
    memory. jax.dlpack.from_dlpack costs about 60 us a result (H200, jax 0.11: its Python, and
    a jnp.asarray dispatch that canonicalises the dtype); jaxlib's DLPack import it calls, with
    the device and its stream found once, costs a few. That import is JAX's private API, so it
    is taken only where it agrees with from_dlpack on the first result (the same memory, shape,
    dtype and device: `checked`) and where from_dlpack would keep every result's dtype (not a
    64-bit one without jax_enable_x64); from_dlpack itself otherwise."""
    public = jax.dlpack.from_dlpack
    try:
        if any(jax.dtypes.canonicalize_dtype(np.dtype(name)) != np.dtype(name)
               for name in dtype_names):
            return public
        jaxlib = importlib.import_module("jaxlib._jax")
        version = importlib.import_module("jax._src.lib").jaxlib_extension_version
        device = next(iter(like.devices()))
        stream = device.get_stream_for_external_ready_events()
    except Exception:  # noqa: BLE001  another JAX than the ones this was written for
        return public
    dlpack_cuda = 2
    trailing = (dlpack_cuda,) if version >= 467 else ()  # the producer's device type, since 467

    def private(result):
        if result.__dlpack_device__()[1] != device.local_hardware_id:
            return public(result)
        return jaxlib.dlpack_managed_tensor_to_buffer(
            result.__dlpack__(stream=stream), device, stream, None, *trailing)

    def checked(result):
        nonlocal current
        try:
            imported = private(result)
            agrees = (imported.unsafe_buffer_pointer() ==
                      result.__cuda_array_interface__["data"][0]
                      and imported.shape == tuple(result.shape)
                      and imported.dtype == np.dtype(result.dtype)
                      and imported.devices() == like.devices())
        except Exception:  # noqa: BLE001
            agrees = False
        current = private if agrees else public
        return imported if agrees else public(result)

    current = checked
    return lambda result: current(result)
