"""The ATen conversion table against eager PyTorch, on PyTorch's own OpInfo samples.

Every OpInfo of torch's op_db is traced to an ATen graph with kiln's decomposition table (as
AOTAutograd would hand it to kiln); the graphs kiln converts whole are compiled and compared with
eager PyTorch on float32, float64 and int64 samples. Then the table is walked: every entry must
have been exercised by some sample, or be listed in NOT_COVERED_BY_OPINFO with a test of its own.
"""
import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx
from torch.testing._internal.common_methods_invocations import op_db

import kiln.torch
from kiln.torch._aten_table import TABLE
from kiln.torch._lowering import CompiledGraph
from kiln.torch._partition import refused_nodes

DTYPES = (torch.float32, torch.float64, torch.int64)
SAMPLES_PER_DTYPE = 2
# Ops whose results are random or uninitialised memory: nothing to compare.
NONDETERMINISTIC = ("rand", "dropout", "normal", "bernoulli", "multinomial", "empty", "uniform",
                    "exponential", "geometric", "cauchy", "log_normal", "poisson")
# Entries no OpInfo sample reaches through the decompositions (exercised by the model tests in
# test_torch_models.py and test_torch_backend.py).
NOT_COVERED_BY_OPINFO = {
    "aten._native_batch_norm_legit_no_training.default",
    "aten._native_batch_norm_legit_functional.default",
    "aten._native_batch_norm_legit.default",
    "aten.threshold_backward.default",
    "aten.lift_fresh_copy.default",
    "aten.alias.default",
    "aten.detach.default",
    "aten.numpy_T.default",
    "aten.matmul.default",
    "aten.reshape.default",
    "aten.split.Tensor",
    "aten.split_with_sizes.default",
    "aten.squeeze.default",
    "aten.squeeze.dim",
    "aten.adaptive_avg_pool2d.default",
    "aten.max_pool2d_with_indices.default",
}


def _tensors_of(sample):
    """The sample's tensors (positional inputs of the traced function) and a function that
    calls the op with them put back in place."""
    leaves, spec = torch.utils._pytree.tree_flatten((sample.input, sample.args, sample.kwargs))
    positions = [k for k, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor)]

    def call(op, *tensors):
        filled = list(leaves)
        for position, tensor in zip(positions, tensors):
            filled[position] = tensor
        value, args, kwargs = torch.utils._pytree.tree_unflatten(filled, spec)
        return op(value, *args, **kwargs)
    return [leaves[k] for k in positions], call


def _graph(op, sample):
    tensors, call = _tensors_of(sample)
    if not tensors or any(t.is_complex() or t.layout != torch.strided for t in tensors):
        return None, None, None
    try:
        graph = make_fx(lambda *ts: call(op, *ts), tracing_mode="fake",
                        decomposition_table=kiln.torch.decompositions())(*tensors)
    except Exception:  # a sample make_fx cannot trace (data-dependent output shapes, ...)
        return None, None, None
    return graph, tensors, call


def _selected_ops():
    return [op for op in op_db if not any(word in op.name for word in NONDETERMINISTIC)]


def _flat_results(value):
    leaves, _ = torch.utils._pytree.tree_flatten(value)
    return [leaf for leaf in leaves if isinstance(leaf, torch.Tensor)]


_CASES = {}  # (name, variant) -> cases; OpInfos are not hashable


def _cases(op):
    """(dtype, sample, ATen graph, tensors, call) for each sample kiln converts whole."""
    key = (op.name, op.variant_test_name)
    if key in _CASES:
        return _CASES[key]
    cases = _CASES[key] = []
    for dtype in DTYPES:
        if dtype not in op.supported_dtypes("cpu"):
            continue
        for sample in list(op.sample_inputs("cpu", dtype, requires_grad=False))[:SAMPLES_PER_DTYPE]:
            graph, tensors, call = _graph(op.op, sample)
            if graph is None or refused_nodes(graph):
                continue
            if any(node.op == "call_function" for node in graph.graph.nodes):
                cases.append((dtype, sample, graph, tensors, call))
    return cases


@pytest.mark.parametrize("op", _selected_ops(), ids=lambda op: f"{op.name}.{op.variant_test_name}")
def test_opinfo_samples_match_eager(op):
    for dtype, sample, graph, tensors, call in _cases(op):
        try:
            want = _flat_results(call(op.op, *tensors))
        except Exception:  # a sample eager PyTorch rejects: nothing to compare
            continue
        got = [item for item in CompiledGraph(graph, tensors, {"mode": "default"})(list(tensors))
               if isinstance(item, torch.Tensor)]
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert (g.shape, g.dtype) == (w.shape, w.dtype), (op.name, dtype, sample)
            torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5, equal_nan=True,
                                       msg=lambda m: f"{op.name} {dtype} {sample}: {m}")


def test_every_table_entry_is_exercised():
    """The table walked against the ATen ops the converted samples contain."""
    exercised = {str(node.target) for op in _selected_ops() for case in _cases(op)
                 for node in case[2].graph.nodes if node.op == "call_function"}
    missing = sorted(str(op) for op in TABLE
                     if str(op) not in exercised and str(op) not in NOT_COVERED_BY_OPINFO)
    assert not missing, f"table entries no OpInfo sample exercised: {missing}"
