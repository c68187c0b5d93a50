"""Gradients through kiln, for every differentiable OpInfo op of torch's op_db (one float32
sample each): AOTAutograd traces the joint graph with kiln's decompositions, the min-cut
partitioner splits it, kiln compiles the forward and the backward (ops it cannot convert run in
eager PyTorch between its partitions, as in torch.compile), and the gradients of a scalar loss
are compared with eager autograd's. This is the check for the class of bugs where a forward
decomposition and a backward op disagree (the CPU attention op's decomposition once returned
its attention weights where the backward expects the log-sum-exp)."""
import concurrent.futures

import pytest
import torch
from functorch.compile import aot_function
from torch._functorch.partitioners import min_cut_rematerialization_partition
from torch._subclasses.fake_tensor import DataDependentOutputException, DynamicOutputShapeException
from torch.testing._internal.common_methods_invocations import op_db

import kiln.torch
from kiln.torch._partition import compile_graph_module

# Random results (samples, dropout in training mode): nothing to compare.
RANDOM = ("rand", "dropout", "normal", "bernoulli", "multinomial", "empty", "uniform",
          "exponential", "geometric", "cauchy", "log_normal", "poisson", "rrelu",
          "multi_head_attention_forward")
# Sizes that depend on the data: AOTAutograd cannot trace them (Dynamo graph-breaks before).
UNTRACEABLE = (DataDependentOutputException, DynamicOutputShapeException)


_THREAD = concurrent.futures.ThreadPoolExecutor(max_workers=1)


def _shallow(function, *args, **kwargs):
    """function(*args, **kwargs), called in a thread of its own. OpInfo.sample_inputs looks up
    the stack for a unittest test (inspect.stack(): finds every frame's source and module),
    which is slow under pytest's deep stack; none is found either way (these are pytest
    functions), so the samples are the same."""
    return _THREAD.submit(function, *args, **kwargs).result()


def _compiler(graph, inputs):
    return compile_graph_module(graph, inputs, {"mode": "default"}, "eager", "gradient")


def _differentiable_ops():
    return [op for op in op_db if op.supports_autograd
            and torch.float32 in op.supported_dtypes("cpu")
            and not any(word in op.name for word in RANDOM)]


def _loss_of(op, sample):
    """(loss(*tensors), tensors): the sample's tensors as arguments; the loss is the sum of
    squares of every floating-point result that requires grad."""
    leaves, spec = torch.utils._pytree.tree_flatten((sample.input, sample.args, sample.kwargs))
    positions = [k for k, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor)]

    def loss(*tensors):
        filled = list(leaves)
        for position, tensor in zip(positions, tensors):
            filled[position] = tensor
        value, args, kwargs = torch.utils._pytree.tree_unflatten(filled, spec)
        results = [result for result in torch.utils._pytree.tree_leaves(op.op(value, *args,
                                                                              **kwargs))
                   if isinstance(result, torch.Tensor) and result.is_floating_point()
                   and result.requires_grad]
        return sum((result * result).sum() for result in results) if results else None
    return loss, [leaves[k] for k in positions]


@pytest.mark.parametrize("op", _differentiable_ops(),
                         ids=lambda op: f"{op.name}.{op.variant_test_name}")
def test_gradients_match_eager(op):
    sample = next(iter(_shallow(op.sample_inputs, "cpu", torch.float32, requires_grad=True)),
                  None)
    if sample is None:
        return
    loss, tensors = _loss_of(op, sample)
    differentiable = [tensor for tensor in tensors if tensor.requires_grad]
    if not differentiable or any(tensor.is_complex() or tensor.layout != torch.strided
                                 for tensor in tensors):
        return
    try:
        eager_loss = loss(*tensors)
    except Exception:  # a sample eager PyTorch rejects: nothing to compare
        return
    if eager_loss is None:
        return
    want = torch.autograd.grad(eager_loss, differentiable, allow_unused=True)
    compiled = aot_function(loss, fw_compiler=_compiler, bw_compiler=_compiler,
                            partition_fn=min_cut_rematerialization_partition,
                            decompositions=kiln.torch.decompositions())
    try:
        compiled_loss = compiled(*tensors)
    except UNTRACEABLE:
        return
    got = torch.autograd.grad(compiled_loss, differentiable, allow_unused=True)
    for g, w, tensor in zip(got, want, differentiable):
        g = torch.zeros_like(tensor) if g is None else g  # unused: None in eager, zeros here
        w = torch.zeros_like(tensor) if w is None else w
        torch.testing.assert_close(g, w, rtol=1e-3, atol=1e-4, equal_nan=True,
                                   msg=lambda m: f"{op.name} {sample}: {m}")
