"""The ATen conversion table against eager PyTorch, on PyTorch's own OpInfo samples.

Every OpInfo of torch's op_db is traced to an ATen graph with kiln's decomposition table (as
AOTAutograd would hand it to kiln); the graphs kiln converts whole are compiled and compared with
eager PyTorch on one float32, one int64 and one bfloat16 sample each (bfloat16 against eager in
float32, since kiln computes it in float32; CI runs all of it: it stays bounded).
Entries no OpInfo sample reaches have samples of their own (DIRECT_SAMPLES). Then the table is
walked: every entry must have been exercised by some sample.
"""
import itertools

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx
from torch.testing._internal.common_methods_invocations import op_db

import kiln.torch
from kiln.torch._aten_table import TABLE
from kiln.torch._lowering import CompiledGraph
from kiln.torch._partition import refused_nodes

DTYPES = (torch.float32, torch.int64, torch.bfloat16)
SAMPLES_PER_DTYPE = 1
# Ops whose results are random or uninitialised memory: nothing to compare.
NONDETERMINISTIC = ("rand", "dropout", "normal", "bernoulli", "multinomial", "empty", "uniform",
                    "exponential", "geometric", "cauchy", "log_normal", "poisson")
aten = torch.ops.aten


def _floats(*shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(len(shape)))


def _integers(*shape):
    return torch.randint(-9, 9, shape, generator=torch.Generator().manual_seed(7))


# Entries no OpInfo sample reaches through the decompositions (the overloads of Python scalars,
# the inference/training forms of batch norm, ...): each with a call of its own.
def _attention_backward(grad, q, k, v, mask):
    out, logsumexp = aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, attn_mask=mask)
    return aten._scaled_dot_product_flash_attention_for_cpu_backward(
        grad, q, k, v, out, logsumexp, 0.0, True, attn_mask=mask, scale=0.3)


DIRECT_SAMPLES = {
    "aten._scaled_dot_product_flash_attention_for_cpu.default": (
        lambda q, k, v: aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, is_causal=True),
        [_floats(2, 3, 5, 4), _floats(2, 3, 6, 4), _floats(2, 3, 6, 4)]),
    "aten._scaled_dot_product_flash_attention_for_cpu_backward.default": (
        _attention_backward, [_floats(2, 3, 5, 4), _floats(2, 3, 5, 4), _floats(2, 3, 6, 4),
                              _floats(2, 3, 6, 4), _floats(2, 1, 5, 6)]),
    "aten.masked_fill.Tensor": (lambda x, v: aten.masked_fill.Tensor(x, x > 0, v),
                                [_floats(3, 4), torch.tensor(2.5)]),
    "aten.prod.dim_int": (lambda x: aten.prod.dim_int(x, 1, True), [_floats(3, 4)]),
    "prims.fma.default": (lambda a, b, c: torch.ops.prims.fma(a, b, c),
                          [_floats(3, 4), _floats(3, 4), _floats(4)]),
    "aten.copy.default": (lambda a, b: aten.copy(a, b), [_floats(3, 4), _integers(4)]),
    "aten._adaptive_avg_pool2d.default": (lambda x: aten._adaptive_avg_pool2d(x, [2, 3]),
                                          [_floats(2, 3, 8, 9)]),
    "aten.all.dims": (lambda x: aten.all.dims(x > -1, [0, 2]), [_floats(3, 4, 5)]),
    "aten.bitwise_and.Scalar": (lambda x: aten.bitwise_and.Scalar(x, 6), [_integers(3, 4)]),
    "aten.bitwise_or.Scalar": (lambda x: aten.bitwise_or.Scalar(x, 6), [_integers(3, 4)]),
    "aten.bitwise_xor.Scalar": (lambda x: aten.bitwise_xor.Scalar(x, 6), [_integers(3, 4)]),
    "aten.clamp_max.default": (lambda x: aten.clamp_max(x, 0.25), [_floats(4, 5)]),
    "aten.convolution.default": (
        lambda x, w, b: aten.convolution(x, w, b, [2, 1], [1, 2], [1, 1], False, [0, 0], 2),
        [_floats(2, 4, 9, 8), _floats(6, 2, 3, 3), _floats(6)]),
    "aten.convolution_backward.default": (
        lambda dy, x, w: aten.convolution_backward(dy, x, w, [6], [2, 1], [1, 2], [1, 1], False,
                                                   [0, 0], 2, [True, True, True]),
        [_floats(2, 6, 5, 10), _floats(2, 4, 9, 8), _floats(6, 2, 3, 3)]),
    "aten.div.Scalar_mode": (lambda x: (aten.div.Scalar_mode(x, 4, rounding_mode="floor"),
                                        aten.div.Scalar_mode(x, 4, rounding_mode="trunc")),
                             [_integers(5, 3)]),
    "aten.fmod.Scalar": (lambda x: aten.fmod.Scalar(x, 1.5), [_floats(4, 4)]),
    "aten.sub.Scalar": (lambda x: aten.sub.Scalar(x, 2.5, 3), [_floats(4, 4)]),
    "aten._native_batch_norm_legit_no_training.default": (
        lambda x, w, b, mean, var: aten._native_batch_norm_legit_no_training(
            x, w, b, mean, var, 0.1, 1e-5)[0],
        [_floats(2, 3, 4, 4), _floats(3), _floats(3), _floats(3), _floats(3).abs() + 0.5]),
    "aten._native_batch_norm_legit_functional.default": (
        lambda x, w, b, mean, var: aten._native_batch_norm_legit_functional(
            x, w, b, mean, var, True, 0.1, 1e-5),
        [_floats(2, 3, 4, 4), _floats(3), _floats(3), _floats(3), _floats(3).abs() + 0.5]),
    "aten._native_batch_norm_legit.default": (
        lambda x, w, b, mean, var: aten._native_batch_norm_legit(
            x, w, b, mean.clone(), var.clone(), True, 0.1, 1e-5),
        [_floats(2, 3, 4, 4), _floats(3), _floats(3), _floats(3), _floats(3).abs() + 0.5]),
    "aten.threshold_backward.default": (lambda g, x: aten.threshold_backward(g, x, 0.0),
                                        [_floats(4, 5), _floats(4, 5)]),
    "aten.max_pool2d_with_indices.default": (
        lambda x: aten.max_pool2d_with_indices(x, [3, 3], [2, 2], [1, 1]),
        [_floats(2, 3, 9, 10)]),
    "aten.max_pool2d_with_indices_backward.default": (
        lambda dy, x: aten.max_pool2d_with_indices_backward(
            dy, x, [3, 3], [2, 2], [1, 1], [1, 1], False,
            aten.max_pool2d_with_indices(x, [3, 3], [2, 2], [1, 1])[1]),
        [_floats(2, 3, 5, 5), _floats(2, 3, 9, 10)]),
    "aten.lift_fresh_copy.default": (lambda x: aten.lift_fresh_copy(x) * 2, [_floats(3)]),
    "aten.alias.default": (lambda x: aten.alias(x) * 2, [_floats(3)]),
    "aten.detach.default": (lambda x: aten.detach(x) * 2, [_floats(3)]),
    "aten.split.Tensor": (lambda x: [p * 2 for p in aten.split.Tensor(x, 2, 1)],
                          [_floats(3, 5)]),
    "aten.split_with_sizes.default": (
        lambda x: [p * 2 for p in aten.split_with_sizes(x, [1, 3, 1], 1)], [_floats(3, 5)]),
    "aten.squeeze.default": (lambda x: aten.squeeze(x) + 1, [_floats(3, 1, 4, 1)]),
    "aten.squeeze.dim": (lambda x: aten.squeeze.dim(x, 1) + 1, [_floats(3, 1, 4, 1)]),
}
# Entries whose result is uninitialised memory (torch.empty and friends): shape and dtype only.
UNINITIALISED = {
    "aten.empty.memory_format": (lambda x: aten.empty.memory_format([2, 3]) , [_floats(1)]),
    "aten.empty_like.default": (lambda x: aten.empty_like(x), [_floats(2, 3)]),
    "aten.empty_strided.default": (lambda x: aten.empty_strided([2, 3], [3, 1]), [_floats(1)]),
    "aten.new_empty.default": (lambda x: aten.new_empty(x, [4]), [_floats(2, 3)]),
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
        samples = op.sample_inputs("cpu", dtype, requires_grad=False)
        for sample in itertools.islice(samples, SAMPLES_PER_DTYPE):
            graph, tensors, call = _graph(op.op, sample)
            if graph is None or refused_nodes(graph):
                continue
            if any(node.op == "call_function" for node in graph.graph.nodes):
                cases.append((dtype, sample, graph, tensors, call))
    return cases


def _in_float32(tensors):
    return [t.float() if t.dtype in (torch.bfloat16, torch.float16) else t for t in tensors]


@pytest.mark.parametrize("op", _selected_ops(), ids=lambda op: f"{op.name}.{op.variant_test_name}")
def test_opinfo_samples_match_eager(op):
    for dtype, sample, graph, tensors, call in _cases(op):
        try:
            want = _flat_results(call(op.op, *tensors))
            if dtype == torch.bfloat16:  # kiln computes bfloat16 in float32, rounding once:
                # its reference is eager PyTorch in float32, rounded to the result's dtype
                want = [r.to(w.dtype) for r, w in
                        zip(_flat_results(call(op.op, *_in_float32(tensors))), want)]
        except Exception:  # a sample eager PyTorch rejects: nothing to compare
            continue
        got = [item for item in CompiledGraph(graph, tensors, {"mode": "default"})(list(tensors))
               if isinstance(item, torch.Tensor)]
        assert len(got) == len(want)
        # bfloat16: a few of its ulps (2**-7 each), since the decompositions' own casts round
        # some intermediates that the float32 reference keeps.
        tolerance = {"rtol": 3.2e-2, "atol": 1e-2} if dtype == torch.bfloat16 else {
            "rtol": 1e-4, "atol": 1e-5}
        for g, w in zip(got, want):
            assert (g.shape, g.dtype) == (w.shape, w.dtype), (op.name, dtype, sample)
            torch.testing.assert_close(g, w, equal_nan=True, **tolerance,
                                       msg=lambda m: f"{op.name} {dtype} {sample}: {m}")


def _aten_graph(function, tensors):
    return make_fx(function, tracing_mode="fake",
                   decomposition_table=kiln.torch.decompositions())(*tensors)


def _compiled_results(graph, tensors):
    assert not refused_nodes(graph)
    outputs = CompiledGraph(graph, tensors, {"mode": "default"})(list(tensors))
    return [item for item in outputs if isinstance(item, torch.Tensor)]


@pytest.mark.parametrize("entry", sorted(DIRECT_SAMPLES))
def test_direct_samples_match_eager(entry):
    function, tensors = DIRECT_SAMPLES[entry]
    graph = _aten_graph(function, tensors)
    assert entry in {str(node.target) for node in graph.graph.nodes}
    want = _flat_results(function(*tensors))
    got = _compiled_results(graph, tensors)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert (g.shape, g.dtype) == (w.shape, w.dtype)
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("entry", sorted(UNINITIALISED))
def test_uninitialised_creation_has_torchs_shape_and_dtype(entry):
    function, tensors = UNINITIALISED[entry]
    graph = _aten_graph(function, tensors)
    assert entry in {str(node.target) for node in graph.graph.nodes}
    (got,), (want,) = _compiled_results(graph, tensors), _flat_results(function(*tensors))
    assert (got.shape, got.dtype) == (want.shape, want.dtype)


def test_every_table_entry_is_exercised():
    """The table walked against the ATen ops the converted samples contain."""
    exercised = {str(node.target) for op in _selected_ops() for case in _cases(op)
                 for node in case[2].graph.nodes if node.op == "call_function"}
    exercised |= set(DIRECT_SAMPLES) | set(UNINITIALISED)
    missing = sorted(str(op) for op in TABLE if str(op) not in exercised)
    assert not missing, f"table entries no sample exercised: {missing}"
