"""The ATen conversion table against eager PyTorch, on PyTorch's own OpInfo samples.

Every OpInfo of torch's op_db is traced to an ATen graph with kiln's decomposition table (as
AOTAutograd would hand it to kiln); the graphs kiln converts whole are compiled and compared with
eager PyTorch on one float32, one int64 and one bfloat16 sample each (bfloat16 against eager in
float32, since kiln computes it in float32; CI runs all of it: it stays bounded).
Entries no OpInfo sample reaches have samples of their own (DIRECT_SAMPLES). Then the table is
walked: every entry must have been exercised by some sample.
"""
import concurrent.futures
import inspect
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


_SHIFT_COUNTS = torch.tensor([-1, 0, 1, 5, 63, 64])  # (int64 shifts: 64 bits)


# Entries no OpInfo sample reaches through the decompositions (the overloads of Python scalars,
# the inference/training forms of batch norm, ...): each with a call of its own.
def _attention_backward(grad, q, k, v, mask):
    out, logsumexp = aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, attn_mask=mask)
    return aten._scaled_dot_product_flash_attention_for_cpu_backward(
        grad, q, k, v, out, logsumexp, 0.0, True, attn_mask=mask, scale=0.3)


DIRECT_SAMPLES = {
    # (op_db's adaptive max pool samples have windows of unequal sizes, which kiln refuses)
    "aten.adaptive_max_pool2d.default": (lambda x: aten.adaptive_max_pool2d(x, [3, 5]),
                                         [_floats(2, 3, 9, 10)]),
    "aten.adaptive_max_pool2d_backward.default": (
        lambda g, x: aten.adaptive_max_pool2d_backward(
            g, x, aten.adaptive_max_pool2d(x, [1, 1])[1]),
        [_floats(2, 3, 1, 1), _floats(2, 3, 9, 10)]),
    "aten.adaptive_max_pool3d_backward.default": (
        lambda g, x: aten.adaptive_max_pool3d_backward(
            g, x, aten.adaptive_max_pool3d(x, [3, 7, 2])[1]),
        [_floats(2, 3, 3, 7, 2), _floats(2, 3, 6, 7, 8)]),
    "aten._scaled_dot_product_flash_attention_for_cpu.default": (
        lambda q, k, v: aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, is_causal=True),
        [_floats(2, 3, 5, 4), _floats(2, 3, 6, 4), _floats(2, 3, 6, 4)]),
    "aten._scaled_dot_product_flash_attention_for_cpu_backward.default": (
        _attention_backward, [_floats(2, 3, 5, 4), _floats(2, 3, 5, 4), _floats(2, 3, 6, 4),
                              _floats(2, 3, 6, 4), _floats(2, 1, 5, 6)]),
    # a view of x's memory, x contiguous or a permutation of it (a channels-last tensor's)
    "aten.as_strided.default": (
        lambda x: (aten.as_strided(x, (2, 20, 3), (60, 3, 1)) * 2,
                   aten.as_strided(x, (3, 2), (1, 4), 7),
                   aten.as_strided(aten.permute(x, [0, 2, 3, 1]), (2, 5, 12), (60, 1, 5))),
        [_floats(2, 3, 4, 5)]),
    # windows along a dim as a new last axis: overlapping, and patches with a tail dropped
    "aten.unfold.default": (lambda x: (aten.unfold(x, 2, 3, 1) * 2, aten.unfold(x, -1, 2, 2)),
                            [_floats(2, 3, 4, 5)]),
    # the input's and the grid's gradients, of points inside and outside the input
    "aten.grid_sampler_2d_backward.default": (
        lambda g, x, grid: aten.grid_sampler_2d_backward(g, x, grid, 0, 1, False, [True, True]),
        [_floats(2, 3, 4, 5), _floats(2, 3, 5, 6), _floats(2, 4, 5, 2)]),
    "aten.copysign.Scalar": (lambda x, n: (aten.copysign.Scalar(x, -0.0),
                                           aten.copysign.Scalar(n, 2.5)),
                             [_floats(3, 4), _integers(5)]),
    "aten.scatter.value": (lambda x, index: aten.scatter.value(x, 1, index, 2.5),
                           [_floats(3, 5), torch.tensor([[0, 4], [3, 1], [2, 2]])]),
    "aten.index_add.default": (lambda x, index, source: aten.index_add(x, 1, index, source, alpha=2),
                               [_floats(3, 5), torch.tensor([4, 0, 4]), _floats(3, 3)]),
    # interpolation's gathers and their gradients' scatters: unchecked, negatives from the end
    "aten._unsafe_index.Tensor": (lambda x, i, j: aten._unsafe_index(x, [None, i, j]),
                                  [_floats(2, 4, 5), torch.tensor([[3], [0]]),
                                   torch.tensor([4, 0, -1])]),
    "aten._unsafe_index_put.default": (
        lambda x, i, v: aten._unsafe_index_put(x, [None, i], v, True),
        [_floats(3, 5), torch.tensor([4, 0, -1]), _floats(3, 3)]),
    "aten.index_copy.default": (lambda x, index, source: aten.index_copy(x, 1, index, source),
                                [_floats(3, 5), torch.tensor([4, 0]), _floats(3, 2)]),
    "aten.index_fill.int_Scalar": (lambda x, index: aten.index_fill(x, 0, index, -1.5),
                                   [_floats(3, 5), torch.tensor([-1, 0])]),
    "aten.index_fill.int_Tensor": (lambda x, index, v: aten.index_fill(x, 1, index, v),
                                   [_floats(3, 5), torch.tensor(3), torch.tensor(2.5)]),
    "aten.masked_fill.Tensor": (lambda x, v: aten.masked_fill.Tensor(x, x > 0, v),
                                [_floats(3, 4), torch.tensor(2.5)]),
    "aten.prod.dim_int": (lambda x: aten.prod.dim_int(x, 1, True), [_floats(3, 4)]),
    # (distinct values: eager leaves the index among equal ones to its algorithm)
    "aten.median.dim": (lambda x: aten.median.dim(x, 1, True), [_floats(3, 6)]),
    "prims.fma.default": (lambda a, b, c: torch.ops.prims.fma(a, b, c),
                          [_floats(3, 4), _floats(3, 4), _floats(4)]),
    "aten.copy.default": (lambda a, b: aten.copy(a, b), [_floats(3, 4), _integers(4)]),
    "aten._adaptive_avg_pool2d.default": (lambda x: aten._adaptive_avg_pool2d(x, [2, 3]),
                                          [_floats(2, 3, 8, 9)]),
    "aten.all.dims": (lambda x: aten.all.dims(x > -1, [0, 2]), [_floats(3, 4, 5)]),
    "aten.bitwise_and.Scalar": (lambda x: aten.bitwise_and.Scalar(x, 6), [_integers(3, 4)]),
    "aten.bitwise_or.Scalar": (lambda x: aten.bitwise_or.Scalar(x, 6), [_integers(3, 4)]),
    "aten.bitwise_xor.Scalar": (lambda x: aten.bitwise_xor.Scalar(x, 6), [_integers(3, 4)]),
    # shift counts past the bit width and negative ones (0, or -1 for a negative value shifted
    # right); an int8 count of 257 eager wraps to 1
    "aten.__lshift__.Tensor": (aten.__lshift__.Tensor, [_integers(3, 6), _SHIFT_COUNTS]),
    "aten.__rshift__.Tensor": (aten.__rshift__.Tensor, [_integers(3, 6), _SHIFT_COUNTS]),
    "aten.__lshift__.Scalar": (lambda x: aten.__lshift__.Scalar(x, 62), [_integers(3, 4)]),
    "aten.__rshift__.Scalar": (lambda x: aten.__rshift__.Scalar(x.to(torch.int8), 257),
                               [_integers(3, 4)]),
    "aten.bitwise_left_shift.Tensor_Scalar": (
        lambda x: aten.bitwise_left_shift.Tensor_Scalar(x, 3), [_integers(3, 4)]),
    "aten.bitwise_right_shift.Tensor_Scalar": (
        lambda x: aten.bitwise_right_shift.Tensor_Scalar(x, 70), [_integers(3, 4)]),
    "aten.bitwise_left_shift.Scalar_Tensor": (
        lambda s: aten.bitwise_left_shift.Scalar_Tensor(-3, s), [_SHIFT_COUNTS]),
    "aten.bitwise_right_shift.Scalar_Tensor": (
        lambda s: aten.bitwise_right_shift.Scalar_Tensor(-300, s), [_SHIFT_COUNTS]),
    "aten._upsample_bilinear2d_aa.default": (
        lambda x: aten._upsample_bilinear2d_aa(x, [4, 11], False, None, None),
        [_floats(2, 3, 9, 7)]),
    "aten._upsample_bicubic2d_aa.default": (
        lambda x: aten._upsample_bicubic2d_aa(x, [4, 3], True, 0.45, 0.4), [_floats(2, 3, 9, 7)]),
    "aten._upsample_bilinear2d_aa_backward.default": (
        lambda g: aten._upsample_bilinear2d_aa_backward(g, [4, 11], [2, 3, 9, 7], True, None,
                                                        None), [_floats(2, 3, 4, 11)]),
    "aten._upsample_bicubic2d_aa_backward.default": (
        lambda g: aten._upsample_bicubic2d_aa_backward(g, [4, 3], [2, 3, 9, 7], False, 0.45,
                                                       0.4), [_floats(2, 3, 4, 3)]),
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
    "aten.max_pool3d_with_indices.default": (
        lambda x: aten.max_pool3d_with_indices(x, [3, 2, 3], [2, 1, 2], [1, 0, 1]),
        [_floats(2, 3, 6, 7, 8)]),
    "aten.max_pool3d_with_indices_backward.default": (
        lambda dy, x: aten.max_pool3d_with_indices_backward(
            dy, x, [3, 2, 3], [2, 1, 2], [1, 0, 1], [1, 1, 1], False,
            aten.max_pool3d_with_indices(x, [3, 2, 3], [2, 1, 2], [1, 0, 1])[1]),
        [_floats(2, 3, 3, 6, 4), _floats(2, 3, 6, 7, 8)]),
    "aten.avg_pool2d_backward.default": (
        lambda dy, x: aten.avg_pool2d_backward(dy, x, [3, 3], [2, 2], [1, 1], False, True, None),
        [_floats(2, 3, 5, 5), _floats(2, 3, 9, 10)]),
    "aten.avg_pool3d_backward.default": (
        lambda dy, x: aten.avg_pool3d_backward(dy, x, [2, 3, 2], [2, 1, 2], [0, 1, 1], False,
                                               True, 7),
        [_floats(2, 3, 3, 7, 5), _floats(2, 3, 6, 7, 8)]),
    "aten._adaptive_avg_pool3d.default": (lambda x: aten._adaptive_avg_pool3d(x, [3, 7, 2]),
                                          [_floats(2, 3, 6, 7, 8)]),
    "aten._adaptive_avg_pool2d_backward.default": (
        lambda dy, x: aten._adaptive_avg_pool2d_backward(dy, x),
        [_floats(2, 3, 3, 3), _floats(2, 3, 9, 6)]),
    "aten._adaptive_avg_pool3d_backward.default": (
        lambda dy, x: aten._adaptive_avg_pool3d_backward(dy, x),
        [_floats(2, 3, 3, 7, 2), _floats(2, 3, 6, 7, 8)]),
    "aten._embedding_bag.default": (  # a mean's bags and sizes too, as its backward reads
        lambda w, i, o: aten._embedding_bag(w, i, o, False, 1, False, None, False, 4),
        [_floats(10, 3), torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), torch.tensor([0, 2, 2, 5])]),
    "aten._weight_norm_interface_backward.default": (  # over the last dim and the first
        lambda gw, v, g, h: tuple(
            value for gain, dim in ((g, 2), (h, 0)) for value in
            aten._weight_norm_interface_backward(
                gw, v, gain, aten._weight_norm_interface(v, gain, dim)[1], dim)),
        [_floats(4, 3, 5), _floats(4, 3, 5) + 0.5, _floats(1, 1, 5), _floats(4, 1, 1)]),
    # the gradients of the bags' forward, of its bags and sizes
    "aten._embedding_bag_backward.default": (
        lambda g, w, i, o, p: aten._embedding_bag_backward(
            g, i, o, *aten._embedding_bag(w, i, o, False, 0, False, p, False, -1)[1:], 10, False,
            0, False, p),
        [_floats(4, 3), _floats(10, 3), torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]),
         torch.tensor([0, 2, 2, 5]), _floats(8)]),
    "aten._embedding_bag_per_sample_weights_backward.default": (
        lambda g, w, i, o, p: aten._embedding_bag_per_sample_weights_backward(
            g, w, i, o, aten._embedding_bag(w, i, o, False, 0, False, p, False, 4)[1], 0, 4),
        [_floats(4, 3), _floats(10, 3), torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]),
         torch.tensor([0, 2, 2, 5]), _floats(8)]),
    # PyTorch's decomposition takes a 1-d weight's norm over all of it, eager each element's
    # (and its fake norms have one element, eager's six: the weight alone is compared there)
    "aten._weight_norm_interface.default": (
        lambda v, g, w, h: (aten._weight_norm_interface(v, g, 0)[:1]
                            + aten._weight_norm_interface(w, h, 2)),
        [_floats(6), _floats(6) + 1, _floats(4, 3, 5), _floats(1, 1, 5)]),
    "prims.convert_element_type.default": (
        lambda x: (torch.ops.prims.convert_element_type(x, torch.int32),
                   torch.ops.prims.convert_element_type(x, torch.float64)), [_floats(3, 4) * 5]),
    # constants of the trace (no tensor operand: no OpInfo sample converts)
    "aten.tril_indices.default": (lambda x: aten.tril_indices(4, 5, -1) + x, [_integers(1)]),
    "aten.triu_indices.default": (lambda x: aten.triu_indices(5, 3, 1) * x, [_integers(1)]),
    "aten.lift_fresh_copy.default": (lambda x: aten.lift_fresh_copy(x) * 2, [_floats(3)]),
    "aten.alias.default": (lambda x: aten.alias(x) * 2, [_floats(3)]),
    "aten.detach.default": (lambda x: aten.detach(x) * 2, [_floats(3)]),
    "aten.split.Tensor": (lambda x: [p * 2 for p in aten.split.Tensor(x, 2, 1)],
                          [_floats(3, 5)]),
    "aten.split_with_sizes.default": (
        lambda x: [p * 2 for p in aten.split_with_sizes(x, [1, 3, 1], 1)], [_floats(3, 5)]),
    "aten.sort.stable": (lambda x: aten.sort.stable(x, stable=True, dim=0, descending=True),
                         [_integers(6, 5)]),
    "aten.squeeze.default": (lambda x: aten.squeeze(x) + 1, [_floats(3, 1, 4, 1)]),
    "aten.squeeze.dim": (lambda x: aten.squeeze.dim(x, 1) + 1, [_floats(3, 1, 4, 1)]),
}
# Entries for overloads make_fx decomposes (CompositeImplicit) where AOTAutograd's graphs hold
# them (group norm's gradient under dynamic sizes): each traced as its stand-in, renamed.
RENAMED = {
    "aten.true_divide.Tensor": (aten.div.Tensor, lambda a, b: aten.div.Tensor(a, b),
                                [_integers(3, 4), _floats(4)]),
}
# Entries whose result is uninitialised memory (torch.empty and friends): shape and dtype only.
UNINITIALISED = {
    "aten.empty.memory_format": (lambda x: aten.empty.memory_format([2, 3]) , [_floats(1)]),
    "aten.empty_like.default": (lambda x: aten.empty_like(x), [_floats(2, 3)]),
    "aten.empty_strided.default": (lambda x: aten.empty_strided([2, 3], [3, 1]), [_floats(1)]),
    "aten.new_empty.default": (lambda x: aten.new_empty(x, [4]), [_floats(2, 3)]),
    "aten.new_empty_strided.default": (lambda x: aten.new_empty_strided(x, [2, 3], [1, 2]),
                                       [_floats(2, 3)]),
}

# Entries that draw random numbers (other ones than eager's): their distributions, masks and
# gradients are checked by test_torch_dropout.py.
RANDOM_DRAWS = {
    "aten.native_dropout.default", "aten.rand_like.default", "aten.randn_like.default",
    "aten.rand.default", "aten.randn.default", "aten.randint.default", "aten.randint.low",
    "aten.bernoulli.p",
}

# Entries for ops with no CPU kernel, each checked against its CPU counterpart by its own test.
CUDA_ONLY = {  # test_cuda_attention_entries_match_the_math_attention, test_cudnn_grid_sampler...
    "aten.cudnn_grid_sampler.default",
    "aten._scaled_dot_product_efficient_attention.default",
    "aten._scaled_dot_product_efficient_attention_backward.default",
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


_THREAD = concurrent.futures.ThreadPoolExecutor(max_workers=1)


def _shallow(function, *args, **kwargs):
    """function(*args, **kwargs), called in a thread of its own. OpInfo.sample_inputs looks up
    the stack for a unittest test (inspect.stack(): finds every frame's source and module),
    which under pytest's deep stack took longer than tracing the samples; none is found either
    way (these are pytest functions), so the samples are the same."""
    return _THREAD.submit(function, *args, **kwargs).result()


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
        samples = _shallow(op.sample_inputs, "cpu", dtype, requires_grad=False)
        for sample in itertools.islice(samples, SAMPLES_PER_DTYPE):
            graph, tensors, call = _graph(op.op, sample)
            if graph is None or refused_nodes(graph):
                continue
            if any(node.op == "call_function" for node in graph.graph.nodes):
                cases.append((dtype, sample, graph, tensors, call))
    return cases


def _in_float32(tensors):
    return [t.float() if t.dtype in (torch.bfloat16, torch.float16) else t for t in tensors]


# Ops whose order of equal elements eager PyTorch leaves to its algorithm (stable=False; the
# CPU's sort orders ties differently from its stable sort, topk its smallest ones too, kthvalue
# the index of its value among equal ones): their
# reference is the stable order, which kiln's sort keeps (equal elements by position).
def _stable_sort(x, dim=-1, descending=False, stable=None):
    return torch.sort(x, dim=dim, descending=descending, stable=True)


def _stable_topk(x, k, dim=-1, largest=True, sorted=True):
    values, indices = torch.sort(x, dim=dim, descending=largest, stable=True)
    return values.narrow(dim, 0, k), indices.narrow(dim, 0, k)


def _stable_kthvalue(x, k, dim=-1, keepdim=False):
    values, indices = torch.sort(x, dim=dim, stable=True)
    if x.dim() == 0:
        return values, indices
    return (values.narrow(dim, k - 1, 1) if keepdim else values.select(dim, k - 1),
            indices.narrow(dim, k - 1, 1) if keepdim else indices.select(dim, k - 1))


STABLE_REFERENCES = {
    "kthvalue": _stable_kthvalue,
    "sort": _stable_sort, "topk": _stable_topk, "msort": lambda x: _stable_sort(x, 0).values,
    "argsort": lambda x, dim=-1, descending=False, stable=None: _stable_sort(
        x, dim, descending).indices,
}


def _eager_results(op, dtype, tensors, call):
    """Eager PyTorch's results for a case, or None for a sample eager PyTorch rejects."""
    reference = STABLE_REFERENCES.get(op.name, op.op)
    try:
        want = _flat_results(call(reference, *tensors))
        if dtype == torch.bfloat16:  # kiln computes bfloat16 in float32, rounding once:
            # its reference is eager PyTorch in float32, rounded to the result's dtype
            want = [r.to(w.dtype) for r, w in
                    zip(_flat_results(call(reference, *_in_float32(tensors))), want)]
    except Exception:  # a sample eager PyTorch rejects: nothing to compare
        return None
    return want


def _kiln_results(graph, tensors):
    """kiln's tensor results for one case graph compiled alone."""
    return [item for item in CompiledGraph(graph, tensors, {"mode": "default"})(list(tensors))
            if isinstance(item, torch.Tensor)]


# Compiling one tiny graph per case is most of this file's time (a C++ compiler run each): the
# cases of BATCH_OPS consecutive ops are compiled as ONE kiln graph, the disjoint union of their
# graphs (placeholders and outputs concatenated), and its outputs split back per case. Each
# test still compares only its own op's cases. A batch that fails to compile or run, or a case
# whose batched result differs from eager, is compiled alone (what the test checked before), so
# a failure is the op's own, with its own error; a case right alone but wrong in its batch fails
# too.
BATCH_OPS = 24
_SELECTED = None  # _selected_ops(), in the parametrization's order
_BATCHES = {}  # batch index -> {(name, variant): [(want, got) or None per case]}


def _union(graphs):
    """One GraphModule computing every graph's outputs from the concatenation of their
    placeholders; returns it and, per graph, the slice of its outputs."""
    union = torch.fx.Graph()
    remaps = [{} for _ in graphs]
    for k, (graph, remap) in enumerate(zip(graphs, remaps)):  # every placeholder first
        for node in graph.graph.nodes:  # (a placeholder's target is its argument's name)
            if node.op == "placeholder":
                remap[node] = union.placeholder(f"case{k}_{node.target}")
                remap[node].meta = dict(node.meta)
    outputs, slices = [], []
    for graph, remap in zip(graphs, remaps):
        for node in graph.graph.nodes:
            if node.op == "call_function":
                remap[node] = union.node_copy(node, lambda n: remap[n])
            elif node.op == "output":  # CompiledGraph's reading of an output node
                results = node.args[0]
                results = list(results) if isinstance(results, (list, tuple)) else [results]
                start = len(outputs)
                outputs.extend(torch.fx.node.map_arg(results, lambda n: remap[n]))
                slices.append(slice(start, len(outputs)))
            elif node.op != "placeholder":
                raise ValueError(f"FX node kind {node.op}")
    union.output(tuple(outputs))
    return torch.fx.GraphModule(torch.nn.Module(), union), slices


def _batch(index):
    """Per op of batch `index`, per case: None where eager PyTorch rejects the sample, else
    (eager's results, kiln's batched results or None where the batch did not compile)."""
    if index in _BATCHES:
        return _BATCHES[index]
    ops = _SELECTED[index * BATCH_OPS:(index + 1) * BATCH_OPS]
    results, batched = {}, []
    for op in ops:  # eager first, on the very tensors kiln is then given (as case by case)
        try:
            cases = _cases(op)
        except Exception as error:  # raised again in the op's own test
            results[(op.name, op.variant_test_name)] = error
            continue
        results[(op.name, op.variant_test_name)] = entries = []
        for dtype, sample, graph, tensors, call in cases:
            want = _eager_results(op, dtype, tensors, call)
            entries.append(None if want is None else [want, None])
            if want is not None:
                batched.append((entries[-1], graph, tensors))
    if batched:
        try:
            module, slices = _union([graph for _, graph, _ in batched])
            tensors = [tensor for _, _, case_tensors in batched for tensor in case_tensors]
            outputs = CompiledGraph(module, tensors, {"mode": "default"})(list(tensors))
            for (entry, _, _), part in zip(batched, slices):
                entry[1] = [item for item in outputs[part] if isinstance(item, torch.Tensor)]
        except Exception:  # each case alone, in its own test
            for entry, _, _ in batched:
                entry[1] = None
    _BATCHES[index] = results
    return results


def _compare(op, dtype, sample, got, want):
    assert len(got) == len(want)
    # bfloat16: a few of its ulps (2**-7 each), since the decompositions' own casts round
    # some intermediates that the float32 reference keeps.
    tolerance = {"rtol": 3.2e-2, "atol": 1e-2} if dtype == torch.bfloat16 else {
        "rtol": 1e-4, "atol": 1e-5}
    for g, w in zip(got, want):
        assert (g.shape, g.dtype) == (w.shape, w.dtype), (op.name, dtype, sample)
        torch.testing.assert_close(g, w, equal_nan=True, **tolerance,
                                   msg=lambda m: f"{op.name} {dtype} {sample}: {m}")


@pytest.mark.parametrize("op", _selected_ops(), ids=lambda op: f"{op.name}.{op.variant_test_name}")
def test_opinfo_samples_match_eager(op):
    global _SELECTED
    if _SELECTED is None:
        _SELECTED = _selected_ops()
    key = (op.name, op.variant_test_name)
    position = next(k for k, other in enumerate(_SELECTED)
                    if (other.name, other.variant_test_name) == key)
    results = _batch(position // BATCH_OPS)[key]
    if isinstance(results, Exception):
        raise results
    for (dtype, sample, graph, tensors, call), result in zip(_cases(op), results):
        if result is None:  # a sample eager PyTorch rejects: nothing to compare
            continue
        want, got = result
        if got is None:  # the batch did not compile: this case alone
            _compare(op, dtype, sample, _kiln_results(graph, tensors), want)
            continue
        try:
            _compare(op, dtype, sample, got, want)
        except AssertionError as batched:
            # The op's own failure, if compiled alone it fails too; else kiln computed a graph
            # differently beside unrelated ones, a bug of its own.
            _compare(op, dtype, sample, _kiln_results(graph, tensors), want)
            raise AssertionError(f"{op.name} {dtype}: right compiled alone, wrong compiled in "
                                 f"one graph with other ops' samples: {batched}") from None


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


@pytest.mark.parametrize("entry", sorted(RENAMED))
def test_renamed_samples_match_eager(entry):
    stand_in, function, tensors = RENAMED[entry]
    graph = _aten_graph(function, tensors)
    for node in graph.graph.nodes:
        if node.target is stand_in:
            node.target = next(op for op in TABLE if str(op) == entry)
    graph.recompile()
    assert entry in {str(node.target) for node in graph.graph.nodes}
    for got, want in zip(_compiled_results(graph, tensors), _flat_results(function(*tensors))):
        assert (got.shape, got.dtype) == (want.shape, want.dtype)
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("entry", sorted(UNINITIALISED))
def test_uninitialised_creation_has_torchs_shape_and_dtype(entry):
    function, tensors = UNINITIALISED[entry]
    graph = _aten_graph(function, tensors)
    assert entry in {str(node.target) for node in graph.graph.nodes}
    (got,), (want,) = _compiled_results(graph, tensors), _flat_results(function(*tensors))
    assert (got.shape, got.dtype) == (want.shape, want.dtype)


# Ops of op_db that ran in eager PyTorch between kiln's parts (KILN_LOGS=graph_breaks named them;
# test_torch_ops_*.py check their results): each sample of theirs in four dtypes converts whole.
CONVERTED_WHOLE = ("logcumsumexp", "median", "nanmedian", "erfinv", "lgamma",
                   "digamma", "mvlgamma", "fmax", "fmin", "gcd", "lcm", "ldexp", "signbit", "mm",
                   "bmm", "addmm", "baddbmm", "amax", "amin", "argmax", "argmin", "all", "any",
                   "logsumexp", "mean", "index_select", "count_nonzero", "kthvalue", "angle",
                   "round", "sign", "sgn", "cummax", "cummin")
SURVEY_DTYPES = (torch.float32, torch.float64, torch.int64, torch.bool)


@pytest.mark.parametrize("name", CONVERTED_WHOLE)
def test_ops_that_ran_eagerly_convert_whole(name):
    ops = [op for op in op_db if op.name == name]
    assert ops
    converted = 0
    for op in ops:
        for dtype in SURVEY_DTYPES:
            if dtype not in op.supported_dtypes("cpu"):
                continue
            for sample in _shallow(lambda: list(op.sample_inputs("cpu", dtype))):
                graph, _, _ = _graph(op.op, sample)
                if graph is None:
                    continue
                refused = {str(node.target): reason for node, reason in
                           refused_nodes(graph).items()}
                assert not refused, f"{name} {dtype} {sample}: {refused}"
                converted += 1
    assert converted


def test_every_table_entry_is_exercised():
    """The table walked against the ATen ops the converted samples contain."""
    exercised = {str(node.target) for op in _selected_ops() for case in _cases(op)
                 for node in case[2].graph.nodes if node.op == "call_function"}
    exercised |= (set(DIRECT_SAMPLES) | set(UNINITIALISED) | set(RENAMED) | CUDA_ONLY
                  | RANDOM_DRAWS)
    missing = sorted(str(op) for op in TABLE if str(op) not in exercised)
    assert not missing, f"table entries no sample exercised: {missing}"


def test_cudnn_grid_sampler_samples_as_grid_sample_with_align_corners():
    # What F.grid_sample becomes for CUDA tensors where cuDNN takes it (no CPU kernel, no fake
    # one on the CPU build): its graph, traced as grid_sampler_2d and renamed, on the CPU
    # against bilinear sampling with zeros outside and align_corners=True; grid points past
    # the edges included.
    x = _floats(2, 3, 5, 6)
    grid = torch.rand(2, 4, 3, 2, generator=torch.Generator().manual_seed(3)) * 2.4 - 1.2
    graph = _aten_graph(lambda a, g: aten.grid_sampler_2d(a, g, 0, 0, True), [x, grid])
    for node in graph.graph.nodes:
        if node.target is aten.grid_sampler_2d.default:
            node.target, node.args = aten.cudnn_grid_sampler.default, node.args[:2]
    graph.recompile()
    (got,) = _compiled_results(graph, [x, grid])
    want = torch.nn.functional.grid_sample(x, grid, align_corners=True)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("bias_heads", [1, 4])
def test_cuda_attention_entries_match_the_math_attention(bias_heads):
    # What SDPA becomes for CUDA tensors (the memory-efficient kernel's op and its backward)
    # has no CPU kernel: its graph, traced on fake tensors, is checked against torch's math
    # attention on the CPU, forward and gradients (the bias's summed over its broadcast heads).
    torch.manual_seed(0)
    query, key, value = (torch.randn(2, 4, 5, 16) for _ in range(3))
    bias = torch.randn(2, bias_heads, 5, 7)[..., :5]  # strided, as a padded mask comes
    leaves = [tensor.clone().requires_grad_() for tensor in (query, key, value, bias)]
    want = torch.nn.functional.scaled_dot_product_attention(*leaves[:3], attn_mask=leaves[3])
    grad_out = torch.randn_like(want)
    want.backward(grad_out)

    efficient = torch.ops.aten._scaled_dot_product_efficient_attention.default
    forward = make_fx(lambda q, k, v, b: efficient(q, k, v, b, True), tracing_mode="fake")(
        query, key, value, bias)
    out, logsumexp, _, _ = CompiledGraph(forward, [query, key, value, bias], {})(
        [query, key, value, bias])
    torch.testing.assert_close(out, want.detach(), rtol=1e-5, atol=1e-6)
    assert logsumexp.shape == (2, 4, 32)
    reference = torch.logsumexp(query @ key.transpose(-1, -2) / 4 + bias, -1)
    torch.testing.assert_close(logsumexp[..., :5], reference, rtol=1e-5, atol=1e-6)

    backward_op = torch.ops.aten._scaled_dot_product_efficient_attention_backward.default
    seed = torch.zeros((), dtype=torch.int64)
    arguments = [grad_out, query, key, value, bias, out, logsumexp, seed, seed]
    backward = make_fx(lambda *a: backward_op(*a, 0.0, [True, True, True, True]),
                       tracing_mode="fake")(*arguments)
    grads = CompiledGraph(backward, arguments, {})(list(arguments))
    for got, leaf in zip(grads, leaves):
        torch.testing.assert_close(got, leaf.grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mask", ["causal", "float", "bool"])
def test_grouped_query_attention_matches_repeated_keys(mask):
    # Fewer key heads than query heads (Llama, Mistral, Qwen2): query head h reads key head
    # h // groups. Against torch's attention over keys and values repeated per group, forward
    # and gradients (the keys' and values' summed over their group); the query is a permuted
    # view, as a model's (batch, length, heads, features) projection comes.
    torch.manual_seed(0)
    query = torch.randn(2, 5, 6, 8).permute(0, 2, 1, 3)
    key, value = torch.randn(2, 2, 7, 8), torch.randn(2, 2, 7, 8)
    masks = {"causal": None, "float": torch.randn(2, 1, 5, 7), "bool": torch.rand(1, 6, 5, 7) > 0.3}
    attn_mask, causal = masks[mask], mask == "causal"
    masks["bool"][..., 0] = True  # no row entirely masked out
    leaves = [tensor.clone().requires_grad_() for tensor in (query, key, value)]
    want = torch.nn.functional.scaled_dot_product_attention(
        leaves[0], leaves[1].repeat_interleave(3, 1), leaves[2].repeat_interleave(3, 1),
        attn_mask=attn_mask, is_causal=causal)
    grad_out = torch.randn_like(want)
    want.backward(grad_out)

    def attention(q, k, v, *mask_tensor):
        return aten._scaled_dot_product_flash_attention_for_cpu(
            q, k, v, is_causal=causal, attn_mask=mask_tensor[0] if mask_tensor else None)

    def backward(g, q, k, v, *mask_tensor):
        out, logsumexp = attention(q, k, v, *mask_tensor)
        return aten._scaled_dot_product_flash_attention_for_cpu_backward(
            g, q, k, v, out, logsumexp, 0.0, causal,
            attn_mask=mask_tensor[0] if mask_tensor else None)

    given = [query, key, value] + ([] if attn_mask is None else [attn_mask])
    out, _ = _compiled_results(_aten_graph(attention, given), given)
    torch.testing.assert_close(out, want.detach(), rtol=1e-5, atol=1e-6)
    given = [grad_out] + given
    grads = _compiled_results(_aten_graph(backward, given), given)
    for got, leaf in zip(grads, leaves):
        torch.testing.assert_close(got, leaf.grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("call", [lambda x, i: aten.gather(x, 1, i),
                                  lambda x, i: aten.scatter.value(x, 1, i, 1.0),
                                  lambda x, i: aten.scatter_add(x, 1, i, x[:, :2]),
                                  lambda x, i: aten.index_select(x, 1, i[1]),
                                  lambda x, i: aten.embedding(x.t(), i),
                                  lambda x, i: aten.index_add(x, 1, i[1], x[:, :2])],
                         ids=["gather", "scatter", "scatter_add", "index_select", "embedding",
                              "index_add"])
def test_indexing_ops_refuse_negative_indices_as_torch_does(call):
    # torch raises for a negative index in these ops (where x[i] counts it from the end)
    x = _floats(3, 5)
    good, negative = torch.tensor([[0, 4], [3, 1], [2, 2]]), torch.tensor([[0, 4], [3, -1], [2, 2]])
    graph = _aten_graph(call, [x, good])
    torch.testing.assert_close(_compiled_results(graph, [x, good]), _flat_results(call(x, good)))
    with pytest.raises((RuntimeError, IndexError)) as eager:  # each op words it its own way
        call(x, negative)
    # ... and raises RuntimeError or IndexError by op: kiln raises the same
    with pytest.raises(type(eager.value), match="index -1 is out of bounds for axis . with size 5"):
        _compiled_results(graph, [x, negative])


@pytest.mark.parametrize("largest", [True, False])
def test_topk_takes_each_element_once(largest):
    # Rounds of argmax: the values are torch's; the indices pick those values, each element at
    # most once, even where only infinities are left (k past the finite values) or values tie;
    # NaN counts as the largest (torch's order).
    inf = float("inf") * (-1 if largest else 1)
    x = torch.tensor([[3.0, inf, 1.0, inf, inf, 2.0],
                      [5.0, 5.0, 5.0, 1.0, 0.0, 5.0],
                      [float("nan"), 1.0, 2.0, float("nan"), 4.0, 0.5]])
    for k, dim, tensor in ((6, 1, x), (4, 1, x), (2, 0, x), (3, -1, torch.randn(2, 3, 9))):
        graph = _aten_graph(lambda t: aten.topk(t, k, dim, largest), [tensor])
        values, indices = _compiled_results(graph, [tensor])
        want_values, _ = torch.topk(tensor, k, dim, largest)
        torch.testing.assert_close(values, want_values, equal_nan=True)
        assert indices.dtype == torch.int64
        torch.testing.assert_close(torch.gather(tensor, dim, indices), values, equal_nan=True)
        assert (indices.sort(dim).values.diff(dim=dim) > 0).all()  # each element once


def _same_default(schema_default, entry_default):
    """Whether an entry's default means its schema's: an int for a list of that int (a pooling's
    padding 0 for [0, 0]), None for an empty dims list (amax over every dimension)."""
    if isinstance(schema_default, (list, tuple)):
        schema_default = list(schema_default)
        if entry_default is None:
            return schema_default == []
        if isinstance(entry_default, int):
            return all(value == entry_default for value in schema_default)
        return list(entry_default) == schema_default
    return entry_default == schema_default


def test_entries_default_to_their_schemas_defaults():
    """An argument a graph leaves out takes the schema's default: an entry whose own default
    differs computes something else (hardtanh's bounds were None, F.hardtanh_(x) was x)."""
    differing = []
    for overload, entry in TABLE.items():
        parameters = [p for p in list(inspect.signature(entry).parameters.values())[2:]
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        for argument, parameter in zip(overload._schema.arguments, parameters):
            if (argument.has_default_value() and parameter.default is not inspect.Parameter.empty
                    and not _same_default(argument.default_value, parameter.default)):
                differing.append(f"{overload}: {argument.name}={argument.default_value!r}, "
                                 f"the entry's {parameter.name}={parameter.default!r}")
    assert not differing, "\n".join(differing)
