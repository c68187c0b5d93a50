"""kiln.wrap_numpy's results that are an argument or a view of one, or a view of another result
(kiln/_device_results.py): the caller's torch tensor or CuPy array itself, or a view of its
memory, as NumPy returns them for host arrays (tests/python/test_returned_views.py is
kiln.compile's). Each case runs three calls of one signature (the first traces, the others take
the fast path) on arguments of several layouts, against NumPy on host copies: values, shapes,
and that a write through each result reaches the argument exactly where NumPy's does.

On the GPU with torch and CuPy; without one, with a stand-in CuPy over host memory and the CPU
compiler standing in for the GPU's (_host_cupy), which runs wrap_numpy's own code for device
arrays (the trace, the return specs, the views made through CuPy's memory pointers)."""
import sys
import types

import numpy as np
import pytest

import kiln

GPU = not kiln._kiln.cuda_unavailable_reason()

VIEWS = {
    "itself": lambda x: x,
    "transpose": lambda x: x.T,
    "slice": lambda x: x[1:, ::2],
    "row": lambda x: x[2],
    "reshape": lambda x: x.reshape(-1) if x.flags.c_contiguous else x * 1,
    "broadcast": lambda x: np.broadcast_to(x[0], (3,) + x.shape[1:]),
    "flip": lambda x: x[::-1],
    "swapaxes_after_mutation": lambda x: _assigned(x).swapaxes(0, 1),
    "result_and_its_row": lambda x: _doubled_and_row(x),
    "result_twice": lambda x: _twice(x),
    "argument_and_result": lambda x: (x, np.sin(x)),
    "after_a_graph_break": lambda x: (x[1:].T, x * 2) if float(x.sum()) > -1e9 else x,
}


def _assigned(x):
    x[0] = 5.0
    return x


def _doubled_and_row(x):
    b = x * 2.0
    return b, b[1]


def _twice(x):
    b = x + 1.0
    return b, b


LAYOUTS = [("contiguous", lambda d: d), ("strided", lambda d: d[:, ::2]),
           ("transposed", lambda d: d.T)]  # (name, the argument made from a (6, 8) array)


def _libraries():
    if not GPU:  # the stand-in CuPy (the _host_cupy fixture)
        cupy = sys.modules["cupy"]
        return [("cupy", cupy.asarray, cupy.asnumpy)]
    found = []
    torch = pytest.importorskip("torch")
    found.append(("torch", lambda a: torch.from_numpy(np.ascontiguousarray(a)).cuda(),
                  lambda t: t.cpu().numpy()))
    try:
        import cupy
        found.append(("cupy", cupy.asarray, cupy.asnumpy))
    except ImportError:
        pass
    return found


def _leaves(result):
    return list(result) if isinstance(result, tuple) else [result]


def _byte_strides(array, library):
    if library == "torch":
        return tuple(s * array.element_size() for s in array.stride())
    return tuple(array.strides)


def _shares_with(result, argument, library):
    if library == "torch":
        return result.untyped_storage().data_ptr() == argument.untyped_storage().data_ptr()
    import cupy
    return cupy.shares_memory(result, argument)


class _Pointer:
    """A CuPy MemoryPointer over host memory: the array owning it, a byte offset."""

    def __init__(self, owner, offset):
        self.owner, self.offset = owner, offset

    def __add__(self, bytes_further):
        return _Pointer(self.owner, self.offset + bytes_further)


class _HostCupyArray:
    """What kiln reads of a CuPy array (its CUDA Array Interface, dtype, memory pointer), over a
    NumPy array `host`."""

    def __init__(self, shape, dtype, memptr, strides=None):
        self.host = np.ndarray(shape, dtype, buffer=memptr.owner, offset=memptr.offset,
                               strides=strides)

    @classmethod
    def over(cls, host):
        array = cls.__new__(cls)
        array.host = host
        return array

    shape = property(lambda self: self.host.shape)
    dtype = property(lambda self: self.host.dtype)
    itemsize = property(lambda self: self.host.itemsize)
    strides = property(lambda self: self.host.strides)
    T = property(lambda self: _HostCupyArray.over(self.host.T))

    @property
    def data(self):
        owner = self.host
        while isinstance(owner.base, np.ndarray):
            owner = owner.base
        address = self.host.__array_interface__["data"][0]
        return _Pointer(owner, address - owner.__array_interface__["data"][0])

    @property
    def __cuda_array_interface__(self):
        return {"typestr": self.host.dtype.str, "shape": self.host.shape, "version": 3,
                "strides": None if self.host.flags.c_contiguous else self.host.strides,
                "data": (self.host.__array_interface__["data"][0], False)}

    def __getitem__(self, key):
        return _HostCupyArray.over(self.host[key])

    def __setitem__(self, key, value):
        self.host[key] = value

    def get(self):
        return self.host.copy()


_HostCupyArray.__module__ = "cupy"  # (kiln tells libraries by their arrays' module)


@pytest.fixture
def _host_cupy(request, monkeypatch):
    """Without a GPU: the stand-in CuPy, and wrap_numpy's graphs compiled for the CPU
    (conftest's cpu_stand_in)."""
    if GPU:
        return
    request.getfixturevalue("cpu_stand_in")
    cupy = types.ModuleType("cupy")
    cupy.ndarray = _HostCupyArray
    cupy.asarray = lambda a: a if isinstance(a, _HostCupyArray) else _HostCupyArray.over(np.asarray(a))
    cupy.asnumpy = lambda a: a.host.copy()
    cupy.copyto = lambda target, source: np.copyto(target.host, source.host)
    cupy.shares_memory = lambda a, b: np.shares_memory(a.host, b.host)
    monkeypatch.setitem(sys.modules, "cupy", cupy)


@pytest.mark.parametrize("name", list(VIEWS))
def test_wrap_numpy_returns_arguments_and_views_as_numpy_does(name, _host_cupy):
    fn = VIEWS[name]
    for library, to_device, to_host in _libraries():
        function = kiln.wrap_numpy(fn)
        for layout, make in LAYOUTS:
            for call in range(3):
                host_base = np.random.default_rng(call).standard_normal((6, 8)).astype(np.float32)
                host = make(host_base.copy())
                device = make(to_device(host_base))
                what = f"{name}, {library}, {layout}, call {call}"
                expected, got = _leaves(fn(host)), _leaves(function(device))
                np.testing.assert_array_equal(to_host(device), host, err_msg=what)
                assert len(got) == len(expected), what
                for k, (g, e) in enumerate(zip(got, expected)):
                    assert tuple(g.shape) == e.shape, what
                    np.testing.assert_allclose(to_host(g), e, rtol=2e-6, atol=1e-7, err_msg=what)
                    if e is host:
                        assert g is device, what  # the caller's array itself
                    negative = library == "torch" and any(s < 0 for s in e.strides)
                    if not negative:  # NumPy's layout (a new array in NumPy's memory order too)
                        assert _byte_strides(g, library) == e.strides, what
                    for j in range(k):  # an array returned twice is one array; a view of
                        assert (g is got[j]) == (e is expected[j]), what  # one shares it
                        assert (_shares_with(g, got[j], library)
                                == (np.shares_memory(e, expected[j]) and not negative)), what
                    shares = np.shares_memory(e, host)
                    if negative or not shares:  # torch has no negative strides: a new array
                        assert not _shares_with(g, device, library), what
                        continue
                    assert _shares_with(g, device, library), what
                    if e.flags.writeable:  # a write through it reaches the argument
                        e[...] = 7.0
                        g[...] = 7.0
                        np.testing.assert_array_equal(to_host(device), host, err_msg=what)
        # (the break's graphs: the retraced path, kiln._wrap_numpy's _RETRACE)
        assert (len(function.segments) > 0) == (name == "after_a_graph_break")


def test_wrap_numpy_views_of_results_share_their_memory():
    if not GPU:
        return  # tests/python/test_cuda.py::test_wrap_numpy_without_a_gpu_says_why
    torch = pytest.importorskip("torch")
    function = kiln.wrap_numpy(_doubled_and_row)
    for _ in range(3):
        x = torch.randn(4, 5, device="cuda")
        doubled, row = function(x)
        assert row.untyped_storage().data_ptr() == doubled.untyped_storage().data_ptr()
        row[...] = 3.0
        assert bool((doubled[1] == 3.0).all()) and bool((doubled[0] == x[0] * 2).all())


def test_wrap_numpy_traces_a_strided_argument_with_its_layout():
    """NumPy's flags and strides of a non-contiguous device argument, as its host copy's."""
    if not GPU:
        return  # tests/python/test_cuda.py::test_wrap_numpy_without_a_gpu_says_why
    torch = pytest.importorskip("torch")

    def by_layout(x):
        return x * (2.0 if x.flags.c_contiguous else 3.0) + x.strides[0]

    function = kiln.wrap_numpy(by_layout)
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    for host, device in [(base, torch.from_numpy(base).cuda()),
                         (base[:, ::2], torch.from_numpy(base).cuda()[:, ::2]),
                         (base.T, torch.from_numpy(base).cuda().T)]:
        np.testing.assert_array_equal(function(device).cpu().numpy(), by_layout(host))


def test_wrap_numpy_returns_a_jax_argument_itself():
    if not GPU:
        return  # tests/python/test_cuda.py::test_wrap_numpy_without_a_gpu_says_why
    jax = pytest.importorskip("jax")
    x = jax.device_put(np.arange(12, dtype=np.float32).reshape(3, 4), jax.devices("gpu")[0])
    function = kiln.wrap_numpy(lambda a: (a, a.T, a[1:] * 2))
    for _ in range(2):
        same, transposed, doubled = function(x)
        assert same is x
        np.testing.assert_array_equal(np.asarray(transposed), np.asarray(x).T)
        np.testing.assert_array_equal(np.asarray(doubled), np.asarray(x)[1:] * 2)
