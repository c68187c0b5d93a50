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
