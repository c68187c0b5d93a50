"""Random torch programs through torch.compile(backend="kiln"), against eager PyTorch: chains
of pointwise ops, reductions, scans, sorts and views on a few inputs, each op kept only where
eager accepts it on the example inputs (so shapes always agree). Each program runs three calls:
new data, then other sizes (a recompile, or one symbolic compile with dynamic=True), then
column-major inputs; inputs require grad, and the gradients of a weighted sum of the outputs
are compared too. Seeds print on failure; KILN_TORCH_FUZZ_SEED and KILN_TORCH_FUZZ_PROGRAMS
widen the search."""
import os
import random

import pytest
import torch

import kiln.torch  # noqa: F401  (registers the backend)

UNARY = ["torch.relu({a})", "torch.sigmoid({a})", "torch.tanh({a})", "torch.exp({a}.clamp(-5, 5))",
         "torch.log({a}.abs() + 1)", "torch.sqrt({a}.abs() + 0.1)", "F.gelu({a})", "F.silu({a})",
         "-{a}", "{a}.abs()", "torch.sin({a})", "torch.erf({a})", "torch.floor({a} * 3)",
         "torch.round({a} * 2)", "1.0 / ({a}.abs() + 1)", "{a} * {c}", "{a} + {c}",
         "torch.clamp({a}, -{p}, {p})", "F.leaky_relu({a}, 0.1)", "F.softplus({a})",
         "torch.rsqrt({a}.abs() + 0.5)", "torch.atan({a})", "F.elu({a})", "F.hardswish({a})",
         "{a}.to(torch.float16).to({a}.dtype)", "torch.where({a} > {c}, {a}, torch.zeros_like({a}))",
         "{a}.masked_fill({a} < {c}, 0.5)", "torch.frac({a} * 3)"]
BINARY = ["{a} + {b}", "{a} - {b}", "{a} * {b}", "{a} / ({b}.abs() + 1)", "torch.maximum({a}, {b})",
          "torch.minimum({a}, {b})", "torch.where({a} > {b}, {a}, {b})", "torch.atan2({a}, {b})",
          "torch.pow({a}.abs() + 0.1, {b}.clamp(-2, 2))", "torch.fmod({a}, {b}.abs() + 0.5)",
          "torch.remainder({a}, {b}.abs() + 0.5)", "torch.hypot({a}, {b})", "torch.lerp({a}, {b}, 0.3)",
          "torch.addcmul({a}, {a}, {b}, value=0.5)", "({a} > {b}).to({a}.dtype)",
          "torch.logaddexp({a}, {b})", "torch.copysign({a}, {b})", "{a} @ {b}.transpose(-1, -2)",
          "{a} @ {b}"]
REDUCE = ["{a}.sum({d}, keepdim=True)", "{a}.mean({d}, keepdim=True)", "{a}.amax({d}, keepdim=True)",
          "{a}.amin({d}, keepdim=True)", "{a}.var({d}, keepdim=True)", "{a}.std({d}, keepdim=True)",
          "torch.logsumexp({a}, {d}, keepdim=True)", "torch.softmax({a}, {d})",
          "torch.log_softmax({a}, {d})", "torch.cumsum({a}, {d})", "{a}.sum()",
          "{a}.norm(dim={d}, keepdim=True)", "{a}.argmax({d}, keepdim=True).to({a}.dtype)",
          "{a}.max({d}).values", "F.normalize({a}, dim={d})", "{a}.prod({d}, keepdim=True)",
          "torch.cumprod({a}.clamp(-1.5, 1.5), {d})", "{a}.sort({d}).values", "{a}.topk(2, {d}).values",
          "F.layer_norm({a}, {a}.shape[-1:])", "torch.cummax({a}, {d}).values",
          "{a}.median({d}).values", "{a}.any({d}).to({a}.dtype)"]
VIEWS = ["{a}.transpose(0, 1)", "{a}.t().contiguous()", "{a}.reshape(-1)", "{a}.unsqueeze(0)",
         "{a}.flip({d})", "torch.roll({a}, 1, {d})", "{a}[::2]", "{a}[..., 1:]", "{a}[1:]",
         "torch.cat([{a}, {b}], {d})", "torch.stack([{a}, {b}], 0).sum(0)", "{a}.repeat(2, 1)",
         "{a}.expand(3, *{a}.shape).sum(0)", "torch.tril({a})", "torch.triu({a}, 1)",
         "{a}.chunk(2, {d})[0]", "{a}.narrow({d}, 0, 1)", "{a}[:, None] * {a}[None, :]",
         "{a}.index_select({d}, torch.tensor([0, 0, 1]))", "{a}.diagonal()", "{a}.view(-1, 2)",
         "torch.gather({a}, {d}, torch.zeros_like({a}, dtype=torch.long))", "{a}[torch.tensor([1, 0])]",
         "{a}.unfold(0, 2, 1).sum(-1)", "F.pad({a}, (1, 2))", "{a}.new_ones({a}.shape) + {a}",
         "torch.arange({a}.shape[-1], dtype={a}.dtype) * {a}", "{a}.contiguous()[..., :1].expand_as({a})"]
SEED = int(os.environ.get("KILN_TORCH_FUZZ_SEED", "2026"))
PROGRAMS = int(os.environ.get("KILN_TORCH_FUZZ_PROGRAMS", "24"))
NAMESPACE = {"torch": torch, "F": torch.nn.functional}


def program(rng, inputs):
    """Source of `def f(x0, x1, ...)`: 2 to 8 ops eager accepts on `inputs`, 1 to 3 returned."""
    names = [f"x{k}" for k in range(len(inputs))]
    values, lines = dict(zip(names, inputs)), []
    for step in range(rng.randint(2, 8)):
        for _ in range(20):
            templates = rng.choices([UNARY, BINARY, REDUCE, VIEWS], weights=[4, 4, 2, 2])[0]
            expression = rng.choice(templates).format(
                a=rng.choice(names), b=rng.choice(names), c=round(rng.uniform(-1, 1), 2),
                p=round(rng.uniform(0.2, 2), 2), d=rng.choice([0, 1, -1]))
            try:
                with torch.no_grad():
                    value = eval(expression, NAMESPACE, dict(values))
            except Exception:  # noqa: BLE001  shapes that do not fit: another op
                continue
            if isinstance(value, torch.Tensor) and value.is_floating_point() and value.numel():
                values[f"t{step}"] = value
                names.append(f"t{step}")
                lines.append(f"    t{step} = {expression}")
                break
    returned = names[len(inputs):][-rng.randint(1, 3):] or names[:1]
    return (f"def f({', '.join(names[:len(inputs)])}):\n" + "\n".join(lines) +
            f"\n    return {', '.join(returned)},\n")


def outputs_and_gradients(function, arguments, weights_seed):
    leaves = [a.clone().requires_grad_() for a in arguments]
    outputs = function(*leaves)
    differentiable = [o for o in outputs if o.requires_grad]
    if differentiable:
        generator = torch.Generator().manual_seed(weights_seed)
        sum((torch.randn(o.shape, generator=generator, dtype=o.dtype) * o).sum()
            for o in differentiable).backward()
    return [o.detach() for o in outputs] + [
        leaf.grad if leaf.grad is not None else torch.zeros_like(leaf) for leaf in leaves]


@pytest.mark.parametrize("number", range(PROGRAMS))
def test_random_torch_program_matches_eager(number):
    rng = random.Random(SEED * 1000 + number)
    rows, columns = rng.choice([(4, 6), (5, 5), (8, 3), (3, 16), (6, 6)])
    shapes = rng.choice([[(rows, columns)] * 2, [(rows, columns), (columns,)],
                         [(rows, columns), (rows, columns), (rows, 1)], [(rows, rows)] * 2])
    dtype = rng.choice([torch.float32, torch.float64])
    generator = torch.Generator().manual_seed(number)
    source = program(rng, [torch.randn(*s, generator=generator, dtype=dtype) for s in shapes])
    namespace = dict(NAMESPACE)
    exec(compile(source, f"<torch fuzz program {number}>", "exec"), namespace)
    function = namespace["f"]
    dynamic = rng.choice([None, True])
    torch._dynamo.reset()
    compiled = torch.compile(function, backend="kiln", dynamic=dynamic)
    for call in range(3):
        grow = (1, 2) if call == 1 else (0, 0)
        arguments = [torch.randn(*(d + grow[min(k, 1)] if d > 1 else d for k, d in enumerate(s)),
                                 generator=generator, dtype=dtype) for s in shapes]
        if call == 2:
            arguments = [a.t().contiguous().t() if a.dim() == 2 else a for a in arguments]
        try:
            expected = outputs_and_gradients(function, arguments, call)
        except RuntimeError:  # eager refuses these sizes or layouts (a view of them): so does
            continue          # Dynamo, with its own error
        actual = outputs_and_gradients(compiled, arguments, call)
        tolerance = dict(rtol=2e-3, atol=2e-3) if dtype == torch.float32 else {}
        for k, (got, want) in enumerate(zip(actual, expected)):
            torch.testing.assert_close(
                got, want, equal_nan=True, **tolerance,
                msg=lambda m: f"seed {SEED}, program {number}, call {call}, value {k} "
                              f"(dynamic={dynamic}):\n{source}\n{m}")
