"""Dtypes eager PyTorch's CPU kernels refuse where kiln would compute a value.

Fake tensors' shape rules do not check dtypes the way the eager kernels do: argmax of a bool
tensor, gelu or silu of integers, floor of bools, avg_pool3d of float16 all trace, and kiln's
table (or PyTorch's decomposition into ops kiln has) computed an answer where eager torch raises
NotImplementedError or RuntimeError. Such an op is left whole in the graph, outside kiln: it
runs in eager PyTorch, which raises its own error.

Whether eager refuses is asked of eager itself, once per op and argument signature: the op runs
on zero tensors of the signature's shapes and dtypes. Only a dtype refusal counts (another
error of zeros, an index or a division, is not about the dtype); float32 and float64 arguments,
which every CPU kernel takes, ask nothing, and neither do ops outside aten nor ones whose
arguments or results (sized on the meta device first) pass SIZE_LIMIT elements: a refusal
missed there is kiln's value, as before. A wrong "refused" costs speed only: the op runs in
eager PyTorch, which computes it.
"""
import re

import torch
from torch.utils._python_dispatch import _disable_current_modes

SIZE_LIMIT = 1 << 16
_ALWAYS_TAKEN = (torch.float32, torch.float64)
# Words of eager's dtype refusals: AT_DISPATCH's NotImplementedError ("'gelu' not implemented
# for 'Long'"), and RuntimeErrors ("argmax(): does not support bool input", "Boolean inputs not
# supported for relu", "Integer division with addcdiv is no longer supported", "result type
# Float can't be cast to the desired output type Long"), and a number the dtype cannot hold
# (torch.full((2,), 300, dtype=torch.int8): "value cannot be converted to type int8_t without
# overflow").
_DTYPE_WORDS = re.compile(r"\b(bool|Bool|Boolean|Byte|Char|Short|Int|Long|Half|BFloat16|Float|"
                          r"Double|dtypes?|Integer|integer|overflow)\b")
_memo = {}  # (op, argument signature) -> whether eager refuses
_MEMO_LIMIT = 4096


def refuses(op, args, kwargs):
    """Whether eager PyTorch's CPU kernel of `op` raises for the dtypes of these arguments
    (tensors: real or fake ones, or FX nodes' recorded values)."""
    args = _as_eager_produces(op, args)
    leaves = torch.utils._pytree.tree_leaves((args, kwargs))
    tensors = [value for value in leaves if isinstance(value, torch.Tensor)]
    dtypes = [t.dtype for t in tensors] + [v for v in leaves if isinstance(v, torch.dtype)]
    devices = [t.device for t in tensors] + [v for v in leaves if isinstance(v, torch.device)]
    if all(dtype in _ALWAYS_TAKEN for dtype in dtypes) or not _askable(op, tensors, devices):
        return False
    if any(isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)) for value in leaves):
        return False  # a symbolic size read by eager would add a guard: it is not asked
    key = (op, _signature((args, kwargs)))
    if key not in _memo:
        if len(_memo) >= _MEMO_LIMIT:  # a long run of new shapes: a bounded memo
            _memo.clear()
        _memo[key] = _ask_eager(op, args, kwargs)
    return _memo[key]


def _as_eager_produces(op, args):
    """args with the dtypes eager's kernels give them where the traced graph's differ: a batch,
    group or layer norm of a bfloat16 input and float32 weights (autocast's) saves its mean and
    inverse standard deviation in float32 in eager's kernel, in the input's dtype in the fake
    forward, and eager's backward kernel refuses the fake's dtypes ("mixed dtype (CPU): expect
    parameter to have scalar type of Float", "expected scalar type BFloat16 but found Float"),
    which left the backward whole, to run in eager PyTorch on kiln's forward results and raise.
    PyTorch's decompositions take either."""
    positions = _SAVED_STATISTICS.get(op)
    if positions is None:
        return args
    saved, weight = positions
    if not isinstance(args[weight], torch.Tensor):
        return args
    weight_dtype = args[weight].dtype
    if not all(isinstance(args[k], torch.Tensor) and args[k].dtype != weight_dtype
               and all(type(extent) is int for extent in args[k].shape) for k in saved):
        return args
    args = list(args)
    with _disable_current_modes(), torch._subclasses.fake_tensor.unset_fake_temporarily():
        for k in saved:
            args[k] = torch.empty(tuple(args[k].shape), dtype=weight_dtype)
    return tuple(args)


# backward op -> (positions of its saved mean and inverse standard deviation, of its weight)
_SAVED_STATISTICS = {
    torch.ops.aten.native_batch_norm_backward.default: ((5, 6), 2),
    torch.ops.aten.native_group_norm_backward.default: ((2, 3), 4),
    torch.ops.aten.native_layer_norm_backward.default: ((3, 4), 5),
}


def _askable(op, tensors, devices):
    return (getattr(op, "namespace", None) == "aten"
            and all(device.type == "cpu" for device in devices)
            and all(t.layout == torch.strided
                    and all(type(extent) is int for extent in t.shape) for t in tensors)
            and sum(t.numel() for t in tensors) <= SIZE_LIMIT)


def _signature(tree):
    leaves, spec = torch.utils._pytree.tree_flatten(tree)
    return str(spec), tuple((tuple(leaf.shape), leaf.dtype) if isinstance(leaf, torch.Tensor)
                            else repr(leaf) for leaf in leaves)


def _ask_eager(op, args, kwargs):
    def zeros(device):  # tensors as zeros on `device`, and factory functions' device= too
        def made(value):
            if isinstance(value, torch.Tensor):
                return torch.zeros(tuple(value.shape), dtype=value.dtype, device=device)
            return torch.device(device) if isinstance(value, torch.device) else value
        return made
    with _disable_current_modes(), torch._subclasses.fake_tensor.unset_fake_temporarily(), \
            torch.no_grad():
        try:  # the results' sizes first, on the meta device: nothing huge is computed
            results = op(*torch.utils._pytree.tree_map(zeros("meta"), args),
                         **torch.utils._pytree.tree_map(zeros("meta"), kwargs))
        except Exception as error:  # noqa: BLE001  some meta kernels refuse the dtype too
            return _about_the_dtype(error)
        if sum(value.numel() for value in torch.utils._pytree.tree_leaves(results)
               if isinstance(value, torch.Tensor)) > SIZE_LIMIT:
            return False
        try:
            op(*torch.utils._pytree.tree_map(zeros("cpu"), args),
               **torch.utils._pytree.tree_map(zeros("cpu"), kwargs))
        except Exception as error:  # noqa: BLE001  a value error of zeros: not the dtype's
            return _about_the_dtype(error)
    return False


def _about_the_dtype(error):
    """Whether an op's error refuses its arguments' dtype (AT_DISPATCH's NotImplementedError
    names it: "'abs_cpu' not implemented for 'Bool'"), not the device: an op with no kernel for
    the CPU or the meta device ("Could not run 'aten::...' with arguments from the 'CPU'
    backend": a CUDA-only attention) is not refused for its dtype."""
    message = str(error).split("\n")[0]
    return (isinstance(error, (RuntimeError, TypeError, NotImplementedError))
            and "Could not run" not in message and bool(_DTYPE_WORDS.search(message)))
