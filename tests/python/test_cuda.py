"""NumPy functions on the GPU: kiln.compile(fn, device="cuda") and `with kiln.device("cuda")`.

On a machine without a GPU (CI) asking for CUDA is a clear error and the device setting is
still part of the guard; on a GPU (scripts/gpu-check) the results match NumPy.
"""
import pathlib
import subprocess

import numpy as np
import pytest

import kiln

GPU = not kiln._kiln.cuda_unavailable_reason()


def softmax(x):
    shifted = x - x.max(axis=-1, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=-1, keepdims=True)


def kmeans_labels(points, means):
    return np.argmin(np.linalg.norm(points - means[:, None], axis=2), axis=0)


def sin_cos(x):
    return np.sin(x) + np.cos(x)


def moments(x):
    return x.mean(), x.var(axis=0), x.sum(axis=1), np.cumsum(x, axis=1)


def strided(x):
    return (x[::2, ::-1] * 2.0).sum(axis=0)


def loop_sum(x):
    total = np.zeros_like(x[0])
    for row in x:
        total = total + row * row
    return total


def integer_products(a, b, c):
    # cuBLAS has no integer GEMM: a generated reduction, wrapping in the operands' own type.
    return a @ b, b.T @ c, a[0] @ b


def long_scans(x, n):
    # Longer than a block's tile: scanned in tiles over the grid, each looking back over the
    # tiles before it (codegen/cuda/scan_emitter.cpp); n: exact integer sums.
    return np.cumsum(x), np.cumprod(1.0 + x * 1e-7), np.cumsum(n)


def row_statistics(x, u):
    # Long rows filling the GPU: a block a row of threads holding 8 elements each; logsumexp's
    # max read by the exp and the result, one kernel; a stencil's shifted views not prefetched.
    largest = x.max(axis=-1)
    stencil = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    return largest + np.log(np.sum(np.exp(x - largest[:, None]), axis=-1)), stencil


def pair_distances(a, b, c):
    # Each thread's four steps are rows of `a` sharing the registers of one row of `b`
    # (LaunchPlan::shared_loads); 2047 rows of `c` are not whole steps: the plain launch.
    def distances(p, q):
        d = p[:, None, :] - q[None, :, :]
        return np.sqrt(np.sum(d * d, axis=-1))
    return distances(a, b), distances(c, b), np.sum(np.abs(a[:, None, :5] - b[None, :, :5]), -1)


def graph_break(x):
    if x.sum() > 0:  # a value the trace cannot know: two graphs, the branch in Python
        return np.sin(x) * 2
    return np.cos(x)


CASES = [
    (softmax, lambda r: (r.standard_normal((64, 1000)).astype(np.float32),), 1e-5),
    (kmeans_labels, lambda r: (r.standard_normal((100_000, 2)), r.standard_normal((5, 2))), 0),
    (sin_cos, lambda r: (r.standard_normal(1_000_003).astype(np.float32),), 1e-6),
    (moments, lambda r: (r.standard_normal((300, 257)),), 1e-10),
    (strided, lambda r: (r.standard_normal((101, 33)),), 1e-12),
    (loop_sum, lambda r: (r.standard_normal((50, 17)),), 1e-12),
    (graph_break, lambda r: (r.standard_normal((40, 30)),), 1e-12),
    (row_statistics, lambda r: (r.standard_normal((2048, 2048)), r.standard_normal((600, 700)).astype(np.float32)), 1e-5),
    (pair_distances, lambda r: (r.standard_normal((2048, 8)), r.standard_normal((1024, 8)),
                                r.standard_normal((2047, 8))), 1e-12),
    (long_scans, lambda r: (r.random(5_000_011), r.integers(-1000, 1000, 3_000_017)), 1e-9),
    (integer_products, lambda r: (r.integers(-100, 100, (70, 300)).astype(np.int8),
                                  r.integers(-100, 100, (300, 90)).astype(np.int8),
                                  r.integers(-10**6, 10**6, (300, 40))), 0),
]


def test_unknown_devices_are_refused():
    with pytest.raises(ValueError, match="unknown device"):
        kiln.compile(sin_cos, device="tpu")
    with pytest.raises(ValueError, match="unknown device"):
        kiln.device("gpu")


def test_device_context_is_scoped():
    assert kiln.current_device() == "cpu"
    with kiln.device("cuda"):
        assert kiln.current_device() == "cuda"
        with kiln.device("cpu"):
            assert kiln.current_device() == "cpu"
        assert kiln.current_device() == "cuda"
    assert kiln.current_device() == "cpu"


@pytest.mark.parametrize("fn,make,tolerance", CASES, ids=[c[0].__name__ for c in CASES])
def test_numpy_functions_on_cuda(fn, make, tolerance):
    arguments = make(np.random.default_rng(0))
    compiled = kiln.compile(fn, device="cuda")
    if not GPU:
        with pytest.raises(RuntimeError, match="device='cuda'"):
            compiled(*arguments)
        return
    expected, got = fn(*arguments), compiled(*arguments)
    pairs = zip(got, expected) if isinstance(expected, tuple) else [(got, expected)]
    for g, e in pairs:
        assert isinstance(g, (np.ndarray, np.generic))
        np.testing.assert_allclose(g, e, rtol=tolerance, atol=tolerance)


def test_the_device_context_is_part_of_the_guard():
    x = np.linspace(0, 1, 1000)
    compiled = kiln.compile(sin_cos)
    np.testing.assert_allclose(compiled(x), sin_cos(x))
    with kiln.device("cuda"):
        if GPU:
            np.testing.assert_allclose(compiled(x), sin_cos(x), rtol=1e-12)
        else:
            with pytest.raises(RuntimeError, match="device='cuda'"):
                compiled(x)
    np.testing.assert_allclose(compiled(x), sin_cos(x))  # the CPU entry again


def test_the_package_carries_the_nvrtc_helper_beside_libkiln():
    # A CUDA program's units compile in kiln-nvrtc processes, found beside libkiln.so: NVRTC
    # compiles one program at a time in a process.
    helper = pathlib.Path(kiln.__file__).parent / "kiln-nvrtc"
    assert (helper.parent / "libkiln.so").exists()
    run = subprocess.run([str(helper)], capture_output=True, text=True)
    assert run.returncode == 2 and "usage: kiln-nvrtc" in run.stderr
    # It runs on its own (no libkiln.so, OpenBLAS or oneDNN loaded at its start).
    linked = subprocess.run(["ldd", str(helper)], capture_output=True, text=True).stdout
    assert "libkiln" not in linked and "dnnl" not in linked


def test_wrap_numpy_without_a_gpu_says_why():
    if GPU:
        return  # test_wrap_numpy_keeps_torch_tensors_on_the_gpu
    with pytest.raises(RuntimeError, match="wrap_numpy"):
        kiln.wrap_numpy(sin_cos)(np.ones(4))


@pytest.mark.parametrize("fn,make,tolerance", CASES[:5], ids=[c[0].__name__ for c in CASES[:5]])
def test_wrap_numpy_keeps_torch_tensors_on_the_gpu(fn, make, tolerance):
    if not GPU:
        return  # test_wrap_numpy_without_a_gpu_says_why
    torch = pytest.importorskip("torch")
    arguments = make(np.random.default_rng(1))
    on_gpu = [torch.from_numpy(a).cuda() for a in arguments]
    got = kiln.wrap_numpy(fn)(*on_gpu)
    expected = fn(*arguments)
    pairs = zip(got, expected) if isinstance(expected, tuple) else [(got, expected)]
    for g, e in pairs:
        assert isinstance(g, torch.Tensor) and g.is_cuda
        np.testing.assert_allclose(g.cpu().numpy(), e, rtol=tolerance, atol=tolerance)


def escape_counts(c):
    z = np.zeros_like(c)
    counts = np.zeros(c.shape, np.int64)
    for _ in range(16):
        inside = np.abs(z) <= 2
        z = np.where(inside, z * z + c, z)
        counts += inside
    return counts, z * 1j


@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
def test_wrap_numpy_reads_and_returns_complex_torch_tensors(dtype):
    # kiln.bench.cuda's mandelbrot stopped at "input 0 is float64; the graph was compiled for
    # a complex array" on the H100
    if not GPU:
        return
    torch = pytest.importorskip("torch")
    grid = (np.linspace(-2, 0.6, 24)[None, :] + 1j * np.linspace(-1.2, 1.2, 20)[:, None])
    c = grid.astype(dtype)
    wrapped = kiln.wrap_numpy(escape_counts)
    for _ in range(3):  # the first call, then the replays of a host-bound program
        counts, z = wrapped(torch.from_numpy(c).cuda())
        expected_counts, expected_z = escape_counts(c)
        np.testing.assert_array_equal(counts.cpu().numpy(), expected_counts)
        assert z.dtype == getattr(torch, dtype)
        np.testing.assert_allclose(z.cpu().numpy(), expected_z, rtol=1e-4, equal_nan=True)


def momentum_step(w, v, g, lr, step):
    v = 0.9 * v + g
    return w - lr * v / (step + 1), v


def first_rows(x, n, scale):
    print("rows", n)  # shown once per trace, not once per attempt
    return x[:n] * scale


def test_wrap_numpy_numbers_that_change_are_inputs(capsys):
    """A learning rate and a step count that change every call compile twice, not per call;
    an int the trace needs (a slice bound) stays static, the float beside it dynamic."""
    if not GPU:
        return  # test_wrap_numpy_without_a_gpu_says_why
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    w, v, g = (rng.standard_normal(1000).astype(np.float32) for _ in range(3))
    step = kiln.wrap_numpy(momentum_step)
    for k in range(6):
        got = step(*(torch.from_numpy(a).cuda() for a in (w, v, g)), 0.1 / (k + 1), k)
        want = momentum_step(w, v, g, 0.1 / (k + 1), k)
        for a, b in zip(got, want):
            assert a.dtype == torch.float32
            np.testing.assert_allclose(a.cpu().numpy(), b, rtol=1e-6, atol=1e-6)
    assert len(step.compiled) == 2
    rows = kiln.wrap_numpy(first_rows)
    x = torch.arange(12.0, device="cuda").reshape(6, 2)
    for n, scale in ((1, 0.5), (2, 1.5), (3, 2.5), (3, 3.5)):
        np.testing.assert_array_equal(rows(x, n, scale).cpu().numpy(),
                                      first_rows(x.cpu().numpy(), n, scale))
        assert capsys.readouterr().out.count("rows") == (1 if scale == 3.5 else 2)
    assert len(rows.compiled) == 3  # n = 1; n = 2 and 3 with scale dynamic (3.5: a hit)


def test_wrap_numpy_reads_strided_device_arrays_in_place():
    if not GPU:
        return  # test_wrap_numpy_without_a_gpu_says_why
    torch = pytest.importorskip("torch")
    x = torch.randn(300, 200, device="cuda", dtype=torch.float64)
    view = x.t()[::3]  # transposed and strided: no copy is made
    got = kiln.wrap_numpy(lambda a: np.sin(a) * 2 + a.sum(axis=0))(view)
    expected = np.sin(view.cpu().numpy()) * 2 + view.cpu().numpy().sum(axis=0)
    np.testing.assert_allclose(got.cpu().numpy(), expected, rtol=1e-10, atol=1e-12)  # sums in another order


def test_wrap_numpy_on_views_that_are_not_16_byte_aligned():
    """The same compiled code on an aligned view and on one that starts an element later: the
    16-byte vector loads and stores of the first, the scalar loop for the second."""
    if not GPU:
        return  # test_wrap_numpy_without_a_gpu_says_why
    torch = pytest.importorskip("torch")
    base = torch.randn(32768, device="cuda")
    function = kiln.wrap_numpy(lambda a, b: np.sin(a) * b + np.cos(a))
    for offset in (0, 1, 2, 4):
        a, b = base[offset:offset + 16384], base[4096 - offset:4096 - offset + 16384]
        got = function(a, b)
        a, b = a.cpu().numpy(), b.cpu().numpy()
        np.testing.assert_allclose(got.cpu().numpy(), np.sin(a) * b + np.cos(a), rtol=1e-5,
                                   atol=1e-6)


def layer_norm(x, gamma, beta):
    mean = x.mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5) * gamma + beta


def test_row_kernels_agree_on_aligned_and_misaligned_rows():
    """Rows held in registers move 16 bytes at a time where every array the kernel reads or
    writes that way is 16-byte aligned (codegen/cuda/register_plans.cpp, plan_row_vectors), an
    element at a time otherwise: one compiled function called on views at offsets of 0, 1 and 4
    elements takes both paths, and both agree with NumPy; rows a whole number of a block's
    16-byte runs (1024, and 128 a warp each), others (768), float64 rows."""
    if not GPU:
        return  # test_wrap_numpy_without_a_gpu_says_why
    torch = pytest.importorskip("torch")
    rows = 96
    for dtype, width, tolerance in [(torch.float32, 1024, 2e-5), (torch.float32, 128, 2e-5),
                                    (torch.float32, 768, 2e-5), (torch.float64, 512, 1e-12)]:
        base = torch.randn(rows * width + 8, dtype=dtype, device="cuda")
        scale = torch.randn(width + 8, dtype=dtype, device="cuda")
        normalise, exponentiate = kiln.wrap_numpy(layer_norm), kiln.wrap_numpy(softmax)
        for offset in (0, 1, 4):
            x = base[offset:offset + rows * width].view(rows, width)
            gamma, beta = scale[offset:offset + width], scale[4 - offset % 4:][:width]
            host = [t.cpu().numpy() for t in (x, gamma, beta)]
            np.testing.assert_allclose(normalise(x, gamma, beta).cpu().numpy(), layer_norm(*host),
                                       rtol=tolerance, atol=tolerance)
            np.testing.assert_allclose(exponentiate(x).cpu().numpy(), softmax(host[0]),
                                       rtol=tolerance, atol=tolerance)


def test_wrap_numpy_calls_in_a_loop_reuse_only_dropped_results():
    """Calls of one signature again (the fast path, kiln/_wrap_numpy.py's _TorchCall): a result
    the caller keeps is never written again, a dropped one's memory is reused, and another
    layout, dtype or a tensor that requires grad (under no_grad) takes the full path."""
    if not GPU:
        return  # test_wrap_numpy_without_a_gpu_says_why
    torch = pytest.importorskip("torch")
    function = kiln.wrap_numpy(sin_cos)
    xs = [torch.randn(1000, device="cuda") for _ in range(3)]
    kept = [function(x) for x in xs]
    assert len({result.data_ptr() for result in kept}) == 3
    for x, result in zip(xs, kept):
        np.testing.assert_allclose(result.cpu().numpy(), sin_cos(x.cpu().numpy()), rtol=1e-5, atol=1e-6)
    dropped = function(xs[0]).data_ptr()
    again = function(xs[1])
    assert again.data_ptr() == dropped
    np.testing.assert_allclose(again.cpu().numpy(), sin_cos(xs[1].cpu().numpy()), rtol=1e-5, atol=1e-6)
    weights = torch.randn(1000, device="cuda", requires_grad=True)
    with torch.no_grad():
        others = [xs[0][::2], xs[0].double(), weights, xs[2]]
        for x in others:
            got = function(x)
            assert got.dtype == x.dtype and got.shape == x.shape and not got.requires_grad
            np.testing.assert_allclose(got.cpu().numpy(), sin_cos(x.detach().cpu().numpy()),
                                       rtol=1e-5, atol=1e-6)


def test_wrap_numpy_takes_and_gives_jax_arrays_by_dlpack():
    """JAX arrays have no CUDA Array Interface: they are read by DLPack, in place, and the
    results come back as JAX arrays over kiln's memory (jax.dlpack.from_dlpack)."""
    if not GPU:
        return  # test_wrap_numpy_without_a_gpu_says_why
    import os
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # leave memory to kiln
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    rng = np.random.default_rng(2)
    x = rng.standard_normal((64, 1000)).astype(np.float32)
    points = rng.standard_normal((10_000, 2)).astype(np.float32)
    means = rng.standard_normal((5, 2)).astype(np.float32)
    for fn, arguments, tolerance in [(softmax, (x,), 1e-5), (sin_cos, (x[::2, ::3],), 1e-6),
                                     (kmeans_labels, (points, means), 0)]:
        on_gpu = [jax.device_put(jnp.asarray(a), jax.devices("gpu")[0]) for a in arguments]
        got = kiln.wrap_numpy(fn)(*on_gpu)
        assert isinstance(got, jax.Array) and got.devices() == {jax.devices("gpu")[0]}
        np.testing.assert_allclose(np.asarray(got), fn(*arguments), rtol=tolerance,
                                   atol=tolerance)
        # The result is usable by JAX right away (its stream waits for kiln's kernels).
        np.testing.assert_allclose(np.asarray(got * 2), fn(*arguments) * 2, rtol=tolerance,
                                   atol=tolerance)
    # Neither side waits on the host: kiln's stream waits for JAX's writes of its input, JAX's
    # stream for kiln's result. Large arrays, each produced by work just queued, so that a read
    # before the writes finished would see other values.
    n = 1 << 25
    x = jnp.cos(jnp.arange(n, dtype=jnp.float32) * 1e-3)
    for _ in range(4):
        x = x * 1.0001 + 0.5  # queued on JAX's stream, not waited for
    got = kiln.wrap_numpy(sin_cos)(x)
    later = got * 2 + 1
    x_host = np.asarray(x)
    np.testing.assert_allclose(np.asarray(later), sin_cos(x_host) * 2 + 1, rtol=1e-5, atol=1e-5)


def test_wrap_numpy_calls_on_jax_arrays_again_take_the_fast_path():
    """Calls of one signature on JAX arrays again (kiln/_library_calls.py's JaxCall): each
    result is its own (kept results keep their values), results are imported through jaxlib as
    jax.dlpack.from_dlpack would import them (a float64 result without jax_enable_x64
    canonicalised as from_dlpack does), and another shape or dtype takes the full path."""
    if not GPU:
        return  # test_wrap_numpy_without_a_gpu_says_why
    import os
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    from kiln._library_calls import JaxCall
    gpu = jax.devices("gpu")[0]
    function = kiln.wrap_numpy(sin_cos)
    xs = [jax.device_put(jnp.linspace(0, k + 1, 5000, dtype=jnp.float32), gpu) for k in range(4)]
    kept = [function(x) for x in xs]
    assert isinstance(function.last_call, JaxCall)
    assert len({result.unsafe_buffer_pointer() for result in kept}) == 4
    for x, result in zip(xs, kept):
        assert isinstance(result, jax.Array) and result.devices() == {gpu}
        np.testing.assert_allclose(np.asarray(result), sin_cos(np.asarray(x)), rtol=1e-5,
                                   atol=1e-6)
    for other in (xs[0][:100], xs[1].astype(jnp.int32), xs[2].reshape(50, 100)):
        got = function(other)
        np.testing.assert_allclose(np.asarray(got), sin_cos(np.asarray(other)), rtol=1e-5,
                                   atol=1e-6)
    widened = kiln.wrap_numpy(lambda a: a.astype(np.float64) * 2)
    for x in xs:
        got = widened(x)
        assert got.dtype == jnp.asarray(np.zeros(1)).dtype  # float32 without jax_enable_x64
        np.testing.assert_allclose(np.asarray(got), np.asarray(x).astype(np.float64) * 2,
                                   rtol=1e-6)


class _HostDLPack:
    """A DLPack producer on the CPU (as NumPy arrays and CPU tensors are)."""

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU

    def __dlpack__(self, **kwargs):
        raise AssertionError("a host array must not be exported as a device array")


def test_only_cuda_dlpack_producers_are_device_arrays():
    from kiln import _wrap_numpy
    assert kiln._kiln.device_array_layout(np.ones(3)) is None
    assert kiln._kiln.device_array_layout(_HostDLPack()) is None
    assert not _wrap_numpy._is_device_array(np.ones(3))
    assert not _wrap_numpy._is_device_array(_HostDLPack())


def branchy(x):
    if x.sum() > 0:  # a graph break: the sum comes to the host, x stays on the GPU
        return np.sin(x) * 2
    return np.cos(x) - float(x.max())  # and another


def test_wrap_numpy_graph_breaks_keep_the_data_on_the_gpu():
    if not GPU:
        return  # test_wrap_numpy_without_a_gpu_says_why
    torch = pytest.importorskip("torch")
    function = kiln.wrap_numpy(branchy)
    for sign in (1, -1, 1, -1):
        x = torch.rand(1000, 7, device="cuda", dtype=torch.float64) * sign
        got = function(x)
        assert isinstance(got, torch.Tensor) and got.is_cuda
        np.testing.assert_allclose(got.cpu().numpy(), branchy(x.cpu().numpy()), rtol=1e-12)
    # Each graph is compiled once: the sum, the two branches, the maximum.
    assert len(function.segments) == 4


class _InterfaceOnly:
    """A device array of no known library: only __cuda_array_interface__."""

    def __init__(self, tensor):
        self.tensor = tensor
        self.__cuda_array_interface__ = tensor.__cuda_array_interface__


def test_kiln_device_results_export_dlpack():
    if not GPU:
        return  # test_wrap_numpy_without_a_gpu_says_why
    torch = pytest.importorskip("torch")
    x = torch.linspace(0, 1, 4099, device="cuda")
    got = kiln.wrap_numpy(sin_cos)(_InterfaceOnly(x))
    assert type(got).__name__ == "CudaArray"
    assert got.__dlpack_device__()[0] == 2  # kDLCUDA
    as_torch = torch.from_dlpack(got)  # no copy: the same memory
    assert as_torch.data_ptr() == got.__cuda_array_interface__["data"][0]
    np.testing.assert_allclose(as_torch.cpu().numpy(), sin_cos(x.cpu().numpy()), rtol=1e-6)


def test_wrap_numpy_gradients_on_the_gpu():
    """Gradients through the NumPy code of a wrap_numpy function on CUDA tensors (Dynamo and
    AOTAutograd trace it; kiln compiles forward and backward for the GPU), against eager
    autograd of the same NumPy calls on the CPU."""
    if not GPU:
        return  # tests/python/test_torch_wrap_numpy_gradients.py covers the CPU
    torch = pytest.importorskip("torch")
    from torch._dynamo.external_utils import wrap_numpy as torch_wrap_numpy

    def loss(x, w):
        return (softmax(x @ w) * np.log1p(x * x).sum(axis=1, keepdims=True)).sum()
    rng = np.random.default_rng(5)
    x0, w0 = rng.standard_normal((300, 40)), rng.standard_normal((40, 24))
    results = []
    for fn, device in ((kiln.wrap_numpy(loss), "cuda"),
                       (torch.compile(torch_wrap_numpy(loss), backend="eager"), "cpu")):
        x = torch.tensor(x0, device=device, requires_grad=True)
        w = torch.tensor(w0, device=device, requires_grad=True)
        value = fn(x, w)
        assert value.device.type == device and value.grad_fn is not None
        value.backward()
        results.append([t.detach().cpu() for t in (value, x.grad, w.grad)])
    for got, expected in zip(*results):
        torch.testing.assert_close(got, expected, rtol=1e-9, atol=1e-11)


def attention_scores(q, k):
    return q @ np.swapaxes(k, -1, -2) * 0.125


def test_max_autotune_times_small_products_on_the_gpu_once(capfd):
    """max-autotune's library-or-generated choice on the GPU (src/api/matmul_choice.h): a small
    product is timed as cuBLAS and as a generated reduction on the device, the results are right
    either way, and a later compile (another process) reads the choice back from the disk cache."""
    rng = np.random.default_rng(5)
    q = rng.standard_normal((12, 8, 64)).astype(np.float32)
    k = rng.standard_normal((12, 8, 64)).astype(np.float32)

    def timing_lines():
        compiled = kiln.compile(attention_scores, device="cuda", mode="max-autotune")
        capfd.readouterr()
        kiln.set_logs("perf")
        try:
            got = compiled(q, k)
        finally:
            kiln.set_logs("")
        np.testing.assert_allclose(got, attention_scores(q, k), rtol=1e-5, atol=1e-5)
        return [line for line in capfd.readouterr().err.splitlines() if "max-autotune: matmul" in line]

    if not GPU:
        with pytest.raises(RuntimeError, match="device='cuda'"):
            kiln.compile(attention_scores, device="cuda", mode="max-autotune")(q, k)
        return
    lines = timing_lines()
    assert len(lines) == 1 and "(12, 8, 64) @ (12, 64, 8) float32" in lines[0], lines
    assert "library" in lines[0] and "generated" in lines[0]
    kiln.reset()
    assert timing_lines() == []


def test_the_cuda_source_can_be_read_without_a_gpu():
    """kiln._kiln.cuda_source: the kernels kiln would compile for a GPU, printed anywhere (how
    the emitter's output is read on a machine without one)."""
    trace = kiln._kiln.Trace()
    x = trace.input("float32", [1 << 20])
    y = kiln._kiln.add(kiln._kiln.sin(x), kiln._kiln.cos(x))
    source = kiln._kiln.cuda_source(trace, [y])
    assert 'extern "C" __global__' in source and "float4" in source  # 16-byte loads
    assert "sm_90, 132 multiprocessors" in source
    other = kiln._kiln.cuda_source(trace, [y], architecture=80, multiprocessors=108)
    assert "sm_80, 108 multiprocessors" in other


def test_merged_loops_keep_a_wrap_of_their_index(cuda_sources):
    """np.resize((3, 4) -> (2, 7)) reads x at (7 * i + j) % 12: the CUDA loop pass that merges
    the two loops into one of 14 simplified the remainder by the inner loop's 7 iterations and
    dropped it (the last two elements were read past x: zeros on an H200)."""
    x = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(kiln.compile(lambda a: np.resize(a, (2, 7)))(x),
                                  np.resize(x, (2, 7)))
    kernels = cuda_sources[0][cuda_sources[0].index("__global__"):]
    assert "kiln_mod<int64_t>(i1, 12)" in kernels


def heat_steps(u):
    u = u.copy()
    for _ in range(50):  # the index unread: no write of it per iteration
        u[1:-1] = u[1:-1] + 0.2 * (u[2:] - 2.0 * u[1:-1] + u[:-2])
    return u


def weighted_rows(x):
    total = np.zeros(x.shape[1])
    for i in range(x.shape[0]):  # the index read: written on the stream each iteration
        total = total + x[i] * (i + 1)
    return total


@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
@pytest.mark.parametrize("fn, shape", [(heat_steps, (10_000,)), (weighted_rows, (40, 300))])
def test_captured_loops_replay_on_cuda(fn, shape, mode):
    """A loop of bounds known at compile time walks no device value: its launches (every
    iteration's) are captured into a CUDA graph like any other program's and replayed."""
    if not GPU:
        return  # test_numpy_functions_on_cuda: the clear error without one
    compiled = kiln.compile(fn, device="cuda", mode=mode)
    rng = np.random.default_rng(3)
    for _ in range(4):
        x = rng.standard_normal(shape)
        np.testing.assert_allclose(compiled(x), fn(x), rtol=1e-12, atol=1e-12)


# float32 data far from zero relative to its spread (mean 1e3, standard deviation 1e-2): the
# GPU's Welford states merged in float32 (warp shuffles, shared memory, split blocks' scratch)
# rounded their means by 3e-5 a merge, most of the spread's share, and a row's two passes took
# the deviations from a float32 mean: the variances came out 1e-5 to 1e-3 off (NumPy: 1e-7).
# A whole array split over the grid (1M) and over a block's threads, rows of a layer norm (two
# passes), long rows, a row with a remainder, columns in tiles split over blocks (batch norm's
# statistics of channels-last data) and channels-first statistics (blocks sharing a channel).
FAR_FROM_ZERO_CASES = [((1_000_000,), None), ((20_000,), None), ((64, 768), 1), ((16, 10_000), 1),
                       ((3, 4133), 1), ((50_176, 64), 0), ((16, 64, 56, 56), (0, 2, 3))]
FAR_FROM_ZERO_TOLERANCE = 2e-6  # of the largest variance; float32 merges: 1e-5 and more


def far_from_zero(shape, seed=0):
    """float32 values of mean 1e3 and standard deviation 1e-2."""
    return (np.random.default_rng(seed).standard_normal(shape) * 1e-2 + 1e3).astype(np.float32)


def relative_error(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.max(np.abs(got - want)) / np.max(np.abs(want)))


@pytest.mark.parametrize("shape,axis", FAR_FROM_ZERO_CASES, ids=[str(c) for c in FAR_FROM_ZERO_CASES])
def test_float32_variances_far_from_zero_keep_their_digits(shape, axis):
    """np.var and np.std of float32 data on the GPU (on the CPU where there is none) against
    the float64 statistics of the same values: the GPU's threads fold their elements in
    float32, and merge double Welford states (codegen/cuda/reduce_emitter.cpp)."""
    x = far_from_zero(shape)
    device = "cuda" if GPU else "cpu"
    variance = kiln.compile(lambda a: np.var(a, axis=axis), device=device)(x)
    deviation = kiln.compile(lambda a: np.std(a, axis=axis, ddof=1), device=device)(x)
    assert variance.dtype == deviation.dtype == np.float32
    wide = x.astype(np.float64)
    assert relative_error(variance, np.var(wide, axis=axis)) < FAR_FROM_ZERO_TOLERANCE
    assert relative_error(deviation, np.std(wide, axis=axis, ddof=1)) < FAR_FROM_ZERO_TOLERANCE


def divided_by_row_values(x, scale):
    # Divisors the same for a whole row (its largest magnitude, a constant, both): the GPU
    # divides by a reciprocal computed once and corrects the product (kiln_div_by_uniform).
    largest = np.abs(x).max(axis=1, keepdims=True)
    # (no product added to anything: the compilers contract those into FMAs, NumPy does not)
    return x / largest, x / 3.0, (x * 0.5) / (largest + scale), x / np.float32(0.0)


def extreme_rows(dtype):
    """Rows whose quotients cover the division's edge cases: subnormal and tiny numerators,
    divisors near the largest finite value (reciprocals below the normal range), zeros, signed
    zeros, infinities and NaN; then ordinary random rows and random bit patterns."""
    info = np.finfo(dtype)
    rng = np.random.default_rng(11)
    special = np.array([0.0, -0.0, info.tiny, -info.tiny / 3, info.tiny * 2 ** -10, 1e-30, -1.0,
                        np.inf, -np.inf, np.nan, info.max, -info.max / 3, 7.0, 2.0 ** -100,
                        2.0 ** -101, 2.0 ** 60], dtype)
    rows = [np.resize(special, 64), np.resize(special[::-1], 64), np.full(64, info.tiny, dtype),
            np.resize(np.array([info.max, 1.0, 2.0 ** -120, -3.0], dtype), 64)]
    rows += list((rng.standard_normal((12, 64)) * np.logspace(-35, 35, 12)[:, None]).astype(dtype))
    bits = np.uint32 if dtype == np.float32 else np.uint64
    patterns = rng.integers(0, np.iinfo(bits).max, (48, 64), dtype=bits, endpoint=True).view(dtype)
    return np.concatenate([np.stack(rows).astype(dtype), patterns])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [None, (1024, 512)])
def test_divisions_by_row_values_are_numpys_to_the_bit(dtype, shape):
    """Divisions by a value shared by a row or a kernel are NumPy's correctly rounded ones, on
    the GPU (on the CPU where there is none), subnormal, huge and special values included: in
    rows a block each and, 1024 of 512, a warp each (codegen/cuda/launch_plans.cpp), whose
    threads divide without a branch an element and store again by IEEE division where a check
    failed (kiln_div_by_uniform_checked)."""
    x = extreme_rows(dtype) if shape is None else np.resize(extreme_rows(dtype), shape)
    device = "cuda" if GPU else "cpu"
    with np.errstate(all="ignore"):
        got = kiln.compile(divided_by_row_values, device=device)(x, dtype(1e-30))
        want = divided_by_row_values(x, dtype(1e-30))
    for g, w in zip(got, want):
        assert g.dtype == w.dtype == dtype
        np.testing.assert_array_equal(g, w)
