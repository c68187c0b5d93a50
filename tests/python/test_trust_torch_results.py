"""Results the torch backend hands back from its pool (kiln/_result_pool.py) stay the caller's
while anything the caller holds reaches their memory: a later call writes only a tensor
nothing outside the pool holds."""
import torch

import kiln  # noqa: F401 - registers backend="kiln"
from kiln._result_pool import PooledResult


def test_a_result_whose_storage_alone_is_held_is_not_written_again():
    # The storage's Python object is one per storage, the pool's own: a caller holding
    # r.untyped_storage() (and not r) was invisible to the use count, and the next calls wrote
    # their results into it.
    compiled = torch.compile(lambda a: a * 2 + 1, backend="kiln")
    inputs = [torch.full((64,), float(i)) for i in range(4)]
    storage = compiled(inputs[1]).untyped_storage()
    for _ in range(2):
        for x in inputs:
            compiled(x)
    kept = torch.empty(0).set_(storage, 0, (64,), (1,))
    assert torch.equal(kept, torch.full((64,), 3.0))
    pooled = PooledResult(torch, torch.empty(4))
    held = pooled.tensor.detach().untyped_storage()
    assert not pooled.only_pool_holds()
    del held
    assert pooled.only_pool_holds()


def test_a_result_the_caller_resized_is_never_written_again():
    # r.resize_(n) grows the storage r shares with the pool's tensor, moving its memory: the
    # pool kept the old address, so later calls wrote into freed memory and returned the
    # moved tensor's stale values (0 * 2 + 1 came back as 3).
    compiled = torch.compile(lambda a: a * 2 + 1, backend="kiln")
    x = torch.ones(1 << 12)
    grown = compiled(x)
    grown.resize_(1 << 20)
    del grown
    emptied = compiled(x)
    emptied.untyped_storage().resize_(0)
    del emptied
    for step in range(4):
        assert torch.equal(compiled(x * step), torch.full((1 << 12,), 2.0 * step + 1))
