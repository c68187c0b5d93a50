"""torch.compile(backend="kiln") on CUDA tensors: Dynamo and AOTAutograd capture as on the CPU;
kiln compiles each graph for the GPU (its kernels by NVRTC, matmul by cuBLAS, convolution by
cuDNN), reads the tensors in place and writes results into tensors torch allocates, on torch's
current stream.

Here the graphs are captured from fake CUDA tensors, which any torch build makes: kiln compiles
them for CUDA, and where no GPU is usable says so. The models against eager PyTorch on a real GPU
are tests/gpu/test_torch_cuda_models.py (scripts/gpu-check).
"""
import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.proxy_tensor import make_fx

import kiln
import kiln.torch
from kiln.torch._partition import compile_graph_module
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)

GPU = torch.cuda.is_available() and not kiln._kiln.cuda_unavailable_reason()


def test_cuda_graphs_compile_for_cuda_or_say_why_not():
    """Runs everywhere: a graph of fake CUDA tensors is compiled for CUDA (matmul included);
    without a GPU that is a clear Unsupported error, never a CPU compile of device data."""
    def f(x, w):
        return torch.nn.functional.gelu(x @ w).sum(dim=1)
    with FakeTensorMode():
        x, w = torch.empty(8, 16, device="cuda"), torch.empty(16, 4, device="cuda")
        graph = make_fx(f)(x, w)
        if GPU:
            compiled = compile_graph_module(graph, [x, w], {}, "error", "fake")
            assert compiled.device.type == "cuda"
            return
        with pytest.raises(kiln._kiln.Unsupported, match='device="cuda"'):
            compile_graph_module(graph, [x, w], {}, "error", "fake")


def test_cpu_tensors_beside_a_gpus_compile_for_the_gpu_and_two_gpus_are_refused():
    """CPU tensors beside a GPU's (torch lets 0-d numbers and index tensors mix; a table
    `arange` builds on the CPU) are computed on the GPU, CPU results returned to the CPU (the
    models with them are in tests/gpu); tensors of two GPUs are several devices: eager."""
    from kiln.torch._graph_devices import graph_devices, host_outputs
    with FakeTensorMode():
        x, y = torch.empty(4, device="cuda"), torch.empty(4)
        graph = make_fx(lambda a, b: (a.sin(), b.cos()))(x, y)
        assert graph_devices(graph) == {str(x.device)} and x.device.type == "cuda"
        assert host_outputs(graph) == [1]
        if not GPU:
            with pytest.raises(kiln._kiln.Unsupported, match='device="cuda"'):
                compile_graph_module(graph, [x, y], {}, "error", "mixed")
        if torch.cuda.device_count() == 1:  # a real machine's one GPU: no fake second one
            return
        other = torch.empty(4, device="cuda:1")
        graph = make_fx(lambda a, b: (a.sin(), b.cos()))(x, other)
        with pytest.raises(kiln._kiln.Unsupported, match="several devices"):
            compile_graph_module(graph, [x, other], {}, "error", "mixed")
        assert compile_graph_module(graph, [x, other], {}, "eager", "mixed")._boxed_call


# float32 data far from zero relative to its spread (mean 1e3, standard deviation 1e-2): the
# GPU's Welford states merged in float32 (warp shuffles, shared memory, split blocks' scratch)
# rounded their means by 3e-5 a merge, and a row's two passes took the deviations from a float32
# mean: the variances came out 1e-5 to 1e-3 off (eager: 1e-7). A whole array split over the
# grid, rows of a layer norm (two passes), long rows, columns in tiles split over blocks.
FAR_FROM_ZERO_CASES = [((1_000_000,), None), ((64, 768), 1), ((16, 10_000), 1), ((50_176, 64), 0)]
FAR_FROM_ZERO_TOLERANCE = 2e-6  # of the largest statistic; float32 merges: 1e-5 and more
STRICT = {"unsupported_ops": "error"}  # no silent eager fallback


def far_from_zero(shape, seed=0):
    """float32 values of mean 1e3 and standard deviation 1e-2, on the GPU (the CPU where there
    is none: the same checks of the C++ kernels)."""
    generator = torch.Generator().manual_seed(seed)
    values = torch.randn(shape, generator=generator, dtype=torch.float64) * 1e-2 + 1e3
    return values.float().to("cuda" if GPU else "cpu")


def relative_error(got, want):
    got, want = got.detach().double().cpu(), want.detach().double().cpu()
    return float((got - want).abs().max() / want.abs().max())


@pytest.mark.parametrize("shape,dim", FAR_FROM_ZERO_CASES, ids=[str(c) for c in FAR_FROM_ZERO_CASES])
@pytest.mark.parametrize("name", ["var", "std", "var_mean"])
def test_float32_statistics_far_from_zero_keep_their_digits(shape, dim, name):
    """torch.var, torch.std and torch.var_mean of float32 data against the float64 statistics
    of the same values: the GPU's threads fold their elements in float32 and merge double
    Welford states (codegen/cuda/reduce_emitter.cpp)."""
    x = far_from_zero(shape)

    def statistic(t):
        if name == "var_mean":
            return torch.var_mean(t, dim=dim, correction=0)[0]
        return getattr(torch, name)(t, dim=dim)
    got = torch.compile(statistic, backend="kiln", options=STRICT)(x)
    assert got.dtype == torch.float32 and got.device == x.device
    assert relative_error(got, statistic(x.double())) < FAR_FROM_ZERO_TOLERANCE


def test_layer_norm_and_batch_norm_statistics_far_from_zero_keep_their_digits():
    """A layer norm's inverse deviations (native_layer_norm's third output: rsqrt of the rows'
    variances, eps 1e-12 so that the variance decides it) and a training batch norm's running
    variance (momentum 1: the batch's unbiased variance) over channels-first and channels-last
    data, against float64."""
    x = far_from_zero((64, 768))

    def inverse_deviations(t):
        return torch.ops.aten.native_layer_norm(t, [768], None, None, 1e-12)[2]
    got = torch.compile(inverse_deviations, backend="kiln", options=STRICT)(x)
    want = torch.rsqrt(x.double().var(dim=1, correction=0, keepdim=True) + 1e-12)
    assert relative_error(got, want) < FAR_FROM_ZERO_TOLERANCE
    for memory_format in (torch.contiguous_format, torch.channels_last):
        images = far_from_zero((16, 64, 56, 56), seed=1).contiguous(memory_format=memory_format)
        norm = torch.nn.BatchNorm2d(64, momentum=1.0).to(images.device)
        torch.compile(norm, backend="kiln", options=STRICT)(images)
        want = images.double().var(dim=(0, 2, 3), correction=1)
        assert relative_error(norm.running_var, want) < FAR_FROM_ZERO_TOLERANCE, memory_format
