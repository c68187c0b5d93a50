"""torch's scaled dot-product attention on the CPU through kiln: where the graph reads only the
attention's output (inference), kiln's attention kernel (src/extern/attention.h: blocks of
queries and keys, the scores never stored) runs it; a training graph, which saves the
log-sum-exp for the backward, keeps the matmul-softmax-matmul form. Each case against eager
torch, and the schedule checked for the kernel where it should run."""
import pytest
import torch
import torch.nn.functional as F

import kiln

from torch_fixtures import fresh_dynamo  # noqa: F401


@pytest.fixture
def schedule(capfd):
    """schedule(): what KILN_LOGS=schedule logged since the test began."""
    kiln.set_logs("schedule")
    yield lambda: capfd.readouterr().err
    kiln.set_logs("")


def _tensors(*shapes, dtype=torch.float32, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(shape, generator=generator, dtype=dtype) for shape in shapes]


def _mask(length, keys, kind, dtype=torch.float32):
    """(length, keys), every third row seeing no key, others masked in a pattern."""
    rows, columns = torch.arange(length)[:, None], torch.arange(keys)[None, :]
    keep = (rows % 3 != 1) & ((rows + 2 * columns) % 5 != 0)
    if kind == "bool":
        return keep
    fill = torch.finfo(dtype).min if kind == "min" else float("-inf")
    values = ((rows + columns) % 4).to(dtype) * 0.25
    return torch.where(keep, values, torch.tensor(fill, dtype=dtype))


CASES = {
    # name: (batch, heads, key heads, length, keys, features, mask, keyword arguments)
    "plain": (2, 3, 3, 70, 70, 16, None, {}),
    "causal_blocks": (1, 2, 2, 600, 600, 8, None, {"is_causal": True}),
    "float_mask_rows_without_keys": (2, 2, 2, 130, 530, 8, "float", {}),
    "finfo_min_mask": (1, 2, 2, 40, 40, 8, "min", {}),
    "bool_mask": (1, 2, 2, 66, 520, 4, "bool", {}),
    "grouped_heads": (1, 4, 2, 33, 33, 8, None, {"enable_gqa": True}),
    "scale": (1, 2, 2, 17, 90, 8, "float", {"scale": 0.3}),
    "one_query_row": (2, 4, 4, 1, 700, 16, None, {}),
}


@pytest.mark.parametrize("name", CASES)
def test_inference_attention_runs_kilns_kernel(name, schedule):
    batch, heads, key_heads, length, keys, features, mask, kwargs = CASES[name]
    q, k, v = _tensors((batch, heads, length, features), (batch, key_heads, keys, features),
                       (batch, key_heads, keys, features))
    mask = None if mask is None else _mask(length, keys, mask)

    def attend(q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **kwargs)
    compiled = torch.compile(attend, backend="kiln", fullgraph=True)
    with torch.no_grad():
        want, got = attend(q, k, v, mask), compiled(q, k, v, mask)
    torch.testing.assert_close(got, want, rtol=2e-5, atol=2e-6)
    assert "extern attention" in schedule()


def test_attention_of_a_projection_reads_its_heads_in_place_and_float64(schedule):
    """q, k and v as strided views of one projection (a transformer layer's), in float64."""
    torch.manual_seed(0)
    projection = torch.nn.Linear(32, 96, dtype=torch.float64)

    def layer(x):
        q, k, v = projection(x).view(2, 50, 3, 4, 8).permute(2, 0, 3, 1, 4)
        return F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2)
    x = torch.randn(2, 50, 32, dtype=torch.float64)
    with torch.no_grad():
        want = layer(x)
        got = torch.compile(layer, backend="kiln", fullgraph=True)(x)
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    assert "extern attention" in schedule()


def test_a_dynamic_length_compiles_once(capfd):
    """Dynamo's dynamic lengths (and heads: the same symbol for the query's and the key's)."""
    kiln.set_logs("schedule,recompiles")

    def attend(q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    compiled = torch.compile(attend, backend="kiln")
    with torch.no_grad():
        for length in (70, 130, 600):
            q, k, v = _tensors(*[(1, 2, length, 8)] * 3, seed=length)
            mask = _mask(length, length, "float")
            for x in (q, k, v):
                torch._dynamo.mark_dynamic(x, 1)
                torch._dynamo.mark_dynamic(x, 2)
            torch._dynamo.mark_dynamic(mask, 0)
            torch._dynamo.mark_dynamic(mask, 1)
            torch.testing.assert_close(compiled(q, k, v, mask), attend(q, k, v, mask),
                                       rtol=2e-5, atol=2e-6)
    kiln.set_logs("")
    log = capfd.readouterr().err
    assert "extern attention" in log and "compile" not in log, log


def test_training_keeps_the_form_whose_backward_reads_the_log_sum_exp(schedule):
    q, k, v = (t.requires_grad_() for t in _tensors(*[(2, 2, 40, 8)] * 3))
    mask = _mask(40, 40, "float")

    def loss(q, k, v):
        return (F.scaled_dot_product_attention(q, k, v, attn_mask=mask) ** 2).sum()
    want = torch.autograd.grad(loss(q, k, v), (q, k, v))
    got = torch.autograd.grad(torch.compile(loss, backend="kiln")(q, k, v), (q, k, v))
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5)
    assert "extern attention" not in schedule()


@pytest.mark.parametrize("seed", range(12))
def test_random_attention_agrees_with_eager(seed, schedule):
    """Random sizes (1-150 queries, 1-700 keys, 1-40 features), head groups, masks, causal
    masks, layouts and dtypes against eager."""
    rng = torch.Generator().manual_seed(seed)

    def draw(low, high):
        return int(torch.randint(low, high + 1, (), generator=rng))
    batch, key_heads, groups = draw(1, 2), draw(1, 2), draw(1, 2)
    heads, length, keys, features = key_heads * groups, draw(1, 150), draw(1, 700), draw(1, 40)
    dtype = torch.float64 if seed % 4 == 3 else torch.float32
    mask_kind = ["none", "bool", "float", "min"][seed % 4]
    causal = mask_kind == "none" and seed % 3 == 0

    def operand(heads, rows):
        if seed % 2:  # (batch, rows, heads, features) seen as (batch, heads, rows, features)
            stored = torch.randn(batch, rows, heads, features, generator=rng, dtype=dtype)
            return stored.transpose(1, 2)
        return torch.randn(batch, heads, rows, features, generator=rng, dtype=dtype)
    q, k, v = operand(heads, length), operand(key_heads, keys), operand(key_heads, keys)
    mask = None if mask_kind == "none" else _mask(length, keys, mask_kind, dtype)
    kwargs = {"is_causal": causal, "enable_gqa": groups > 1}

    def attend(q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **kwargs)
    with torch.no_grad():
        want = attend(q, k, v, mask)
        got = torch.compile(attend, backend="kiln", fullgraph=True)(q, k, v, mask)
    tolerance = 1e-12 if dtype == torch.float64 else 3e-6
    torch.testing.assert_close(got, want, rtol=tolerance * 10, atol=tolerance)
    assert "extern attention" in schedule()
