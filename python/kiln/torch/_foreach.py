"""Decompositions of ATen's `_foreach_*` ops (a list of tensors in, a list out) into the op of
each element: `_foreach_add.List(xs, ys, alpha=a)` is `[add(x, y, alpha=a) for x, y in ...]`.

A user's own foreach updates (an EMA of the weights, `torch._foreach_lerp_(ema, params, 0.01)`;
an optimizer with foreach=True) ran in eager PyTorch between kiln's parts: PyTorch has no
decomposition for them (Inductor lowers them itself). Each element's op then converts, and the
elements' updates fuse like any other pointwise work. The decompositions follow the schema:
a `Tensor[]` or `Scalar[]` argument gives each element its own item, anything else is shared.
"""
import functools

import torch

aten = torch.ops.aten

# The element's op where it is not aten's op of the foreach op's name (maximum and minimum take
# no Scalar; the vector norm is linalg's), keyed by (name, overload).
_ELEMENT_OPS = {
    ("maximum", "Scalar"): aten.clamp_min, ("maximum", "ScalarList"): aten.clamp_min,
    ("minimum", "Scalar"): aten.clamp_max, ("minimum", "ScalarList"): aten.clamp_max,
    ("norm", "Scalar"): lambda x, order=2, dtype=None: aten.linalg_vector_norm(x, order,
                                                                                dtype=dtype),
}
_UNSUPPORTED = {"powsum"}  # no single op of the same arguments


def _scaled_product(divide):
    """addcmul or addcdiv with a tensor of scalars, one per element: x + s[i] * a * b (or a / b)."""
    def element(x, a, b, scalar):
        other = aten.div(a, b) if divide else aten.mul(a, b)
        return aten.add(x, aten.mul(other, scalar))
    return element


def _element_op(name, overload):
    if (name, overload) in _ELEMENT_OPS:
        return _ELEMENT_OPS[name, overload]
    if name in ("addcmul", "addcdiv"):  # the scalar keyword-only in the element's schema
        if overload == "Tensor":
            return _scaled_product(name == "addcdiv")
        op = getattr(aten, name)
        return lambda x, a, b, value=1: op(x, a, b, value=value)
    return getattr(aten, name, None)


def _decomposition(foreach_op, element):
    """The decomposition of one foreach overload into `element` per item of its lists."""
    arguments = [argument for argument in foreach_op._schema.arguments
                 if not argument.kwarg_only]  # keyword-only ones (alpha) pass on as they are
    listed = [str(argument.type) in ("List[Tensor]", "List[number]") for argument in arguments]
    scalars_tensor = [argument.name == "scalars" and str(argument.type) == "Tensor"
                      for argument in arguments]

    def decomposed(*args, **kwargs):
        positional = list(args) + [
            kwargs.pop(argument.name) if argument.name in kwargs else argument.default_value
            for argument in arguments[len(args):]]
        count = next(len(value) for value, is_list in zip(positional, listed) if is_list)
        return [element(*[value[i] if is_list else value[i] if per_item else value
                          for value, is_list, per_item in zip(positional, listed,
                                                              scalars_tensor)], **kwargs)
                for i in range(count)]
    return decomposed


def _foreach_ops():
    """Every functional overload of aten's foreach ops (their in-place forms functionalise into
    these), with their element op. The dispatcher's operator names ("aten::_foreach_add.List"),
    not every schema: parsing the 4,000 schemas took 0.04-0.08 s of each process's first
    compilation."""
    for qualified in torch._C._dispatch_get_all_op_names():
        name, _, overload = qualified.partition(".")
        if (not name.startswith("aten::_foreach_") or name.endswith("_")
                or overload.endswith("out")):
            continue
        base = name[len("aten::_foreach_"):]
        element = _element_op(base, overload)
        if base in _UNSUPPORTED or element is None:
            continue
        packet = getattr(aten, name[len("aten::"):])
        yield getattr(packet, overload or "default"), element


@functools.lru_cache(maxsize=None)
def foreach_decompositions():
    """{foreach overload: its decomposition}, built on the first compilation (not at
    import)."""
    return {op: _decomposition(op, element) for op, element in _foreach_ops()}
