"""The CUDA paths' pool of result tensors (kiln/_result_pool.py, used by the torch backend and
kiln.wrap_numpy): a pooled tensor is reused only when nothing outside the pool shares its
storage, since a CUDA graph writes the next results into it in place. The bookkeeping is
device-neutral: tested on CPU tensors here (tests/gpu runs it under real replays)."""
import torch

from kiln._result_pool import PooledResult, ResultPool


def test_only_the_pool_holding_a_tensor_is_seen():
    entry = PooledResult(torch, torch.empty(4, 5))
    assert entry.only_pool_holds()
    assert entry.address == entry.tensor.data_ptr()
    for alias in (lambda t: t.detach(), lambda t: t[1:3], lambda t: t.view(20), lambda t: t.t()):
        held = alias(entry.tensor)
        assert not entry.only_pool_holds()
        del held
        assert entry.only_pool_holds()


def test_a_tensor_saved_for_a_backward_is_held_until_the_backward_ran():
    pooled = PooledResult(torch, torch.randn(6))
    weight = torch.randn(6, requires_grad=True)
    saved = pooled.tensor.detach()  # what the caller gets; autograd saves it for mul's backward
    loss = (saved * weight).sum()
    del saved
    assert not pooled.only_pool_holds()
    loss.backward()
    del loss
    assert pooled.only_pool_holds()


def pool(shapes):
    return ResultPool(torch, None, [(shape, torch.float32) for shape in shapes],
                      torch.device("cpu"))


def test_results_dropped_at_once_reuse_one_tensor():
    graph = pool([(3,), (2, 2)])
    first = [entry.address for entry in graph.take()[0]]
    again = [entry.address for entry in graph.take()[0]]
    assert first == again


def test_a_held_result_gets_another_tensor_and_two_alternate():
    graph = pool([(8,)])
    held = graph.take()[1][0]  # y = model(x): the caller keeps it
    second = graph.take()[0][0].tensor
    assert second.data_ptr() != held.data_ptr()
    held = second.detach()  # the next call's result replaces the first
    third = graph.take()[0][0].tensor
    assert third.data_ptr() not in (held.data_ptr(),)
    held = third.detach()
    fourth = graph.take()[0][0].tensor
    assert fourth.data_ptr() == second.data_ptr()  # two tensors, used in turn
    assert fourth.data_ptr() != held.data_ptr()


def test_results_all_held_never_share_memory():
    graph = pool([(4,)])
    kept = [graph.take()[1][0] for _ in range(5)]
    assert len({t.data_ptr() for t in kept}) == 5


def test_a_result_pooled_as_its_permuted_view_is_reused_once_dropped():
    """A channels-last result returned in its logical order: the pooled tensor has the
    permuted strides, and is free again (not held by a view's base) once the caller drops it."""
    graph = ResultPool(torch, None, [((2, 5, 5, 3), torch.float32, (0, 3, 1, 2))],
                       torch.device("cpu"))
    first = graph.take()[0][0]
    assert first.tensor.shape == (2, 3, 5, 5) and first.tensor.stride() == (75, 1, 15, 3)
    assert first.only_pool_holds()
    held = first.tensor.detach()
    assert graph.take()[0][0].address != first.address
    del held
    assert graph.take()[0][0].address == graph.take()[0][0].address  # one tensor again


def test_a_taken_tensor_is_held_by_its_alias_before_another_call_can_take_it():
    """Calls from several threads: each took the pooled tensor whose storage nothing held yet,
    and made the caller's alias only after the run, so a thread switched to between the two
    took the same tensor, and two calls wrote (and returned) the same memory."""
    graph = pool([(8,)])
    first, first_results = graph.take()
    second, second_results = graph.take()  # the first call's run has not returned yet
    assert first[0].address != second[0].address
    assert first_results[0].data_ptr() == first[0].address


def test_the_torch_backend_called_from_threads_matches_eager():
    import threading
    torch._dynamo.reset()
    function = lambda x: torch.sin(x) * 2 + x.sum()  # noqa: E731
    compiled = torch.compile(function, backend="kiln")
    with torch.no_grad():
        compiled(torch.randn(16, 64))
    wrong, barrier = [], threading.Barrier(6)

    def work(seed):
        generator = torch.Generator().manual_seed(seed)
        barrier.wait()
        with torch.no_grad():
            for _ in range(300):
                x = torch.randn(16, 64, generator=generator)
                if not torch.allclose(compiled(x), function(x), atol=1e-4):
                    wrong.append(seed)
    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(6)]
    switch = __import__("sys").getswitchinterval()
    __import__("sys").setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        __import__("sys").setswitchinterval(switch)
    assert not wrong
