"""torch.bucketize and torch.searchsorted compiled by kiln through PyTorch's binary-search
decomposition (kiln/torch/_bucketize.py) against eager PyTorch, bit for bit: they ran in eager
PyTorch between kiln's parts. Boundaries with ties, NaN and infinities among the values, both
sides, int32 results, several dtypes, dynamic sizes; no boundaries (int64 zeros, where the
decomposition's zeros had the values' dtype); the forms kept whole for eager PyTorch (a sorter,
boundaries of another dtype) still match eager, and so does a batched sorted sequence (kiln's
own search since test_torch_batched_searchsorted.py)."""
import pytest
import torch

import kiln.torch  # noqa: F401
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)

WHOLE = {"options": {"unsupported_ops": "error"}}

BOUNDARIES = [-1.0, -0.3, 0.0, 0.0, 0.5, 1.2, float("inf")]
VALUES = [-2.0, -1.0, -0.3, 0.0, 0.2, 0.5, 1.2, 5.0, float("nan"), float("inf"), float("-inf"),
          -0.0]


def _bins(values, boundaries):
    return (torch.bucketize(values, boundaries),
            torch.bucketize(values, boundaries, right=True, out_int32=True),
            torch.searchsorted(boundaries, values),
            torch.searchsorted(boundaries, values, side="right"),
            torch.searchsorted(boundaries, values, right=True, out_int32=True),
            torch.bucketize(values, boundaries[:0]),  # no boundaries: all in bin 0
            torch.bucketize(values * 2, boundaries) * 3)  # fused with the work around it


def _assert_same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and torch.equal(g, w), (g, w)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int64])
@pytest.mark.parametrize("dynamic", [False, True])
def test_bucketize_and_searchsorted_compile_whole_and_match_eager(dtype, dynamic):
    if dtype.is_floating_point:
        values, boundaries = torch.tensor([VALUES] * 2, dtype=dtype), torch.tensor(BOUNDARIES,
                                                                                    dtype=dtype)
    else:
        values = torch.randint(-5, 9, (3, 7), generator=torch.Generator().manual_seed(0))
        boundaries = torch.tensor([-2, 0, 0, 3, 8])
    compiled = torch.compile(_bins, backend="kiln", dynamic=dynamic, **WHOLE)
    _assert_same(compiled(values, boundaries), _bins(values, boundaries))


def test_the_forms_left_to_eager_pytorch_match_it():
    def left_to_eager(values, boundaries):
        return (torch.searchsorted(boundaries.expand(2, 7), values[:, :3]),  # batched (kiln's)
                torch.searchsorted(boundaries.flip(0), values, sorter=torch.arange(6, -1, -1)),
                torch.bucketize(values, boundaries.to(torch.float64)))  # another dtype
    values, boundaries = torch.tensor([VALUES] * 2), torch.tensor(BOUNDARIES)
    compiled = torch.compile(left_to_eager, backend="kiln")
    _assert_same(compiled(values, boundaries), left_to_eager(values, boundaries))
