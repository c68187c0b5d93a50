"""Result tensors reused from call to call: the torch backend's (kiln/torch/_lowering.py) and
kiln.wrap_numpy's calls on torch CUDA tensors.

Each result of a compiled graph has a pool of up to two tensors. A call takes, per result, a
pooled tensor that nothing outside the pool holds any more (a training step's saved
activations, released by its backward; a result the caller dropped), or a new one (torch's
allocator) where every pooled one is held. Two, so that `y = f(x)`, which holds the last result
while the next call runs, alternates between them. A CUDA graph replay writes them in place,
with no copies (runtime/cuda/cuda_executable.h), and the caller gets detached aliases: fresh
tensor objects, cheaper than new tensors (0.35 against 1.4 us on the CPU, 2.8 us for a CUDA
tensor on an H200's host), the pool's own holding one reference each. On the CPU a pooled
result's pages stay mapped from call to call, where a new large result faults its pages in."""

import sys
import threading

_POOLED_RESULTS = 2  # tensors kept per result


class PooledResult:
    """A pooled tensor with its storage object held, so that the storage's use count is 2 (the
    tensor, the storage object) exactly while no alias, view or saved tensor for a backward
    shares its memory; and its address, what kiln writes."""
    __slots__ = ("tensor", "storage", "storage_address", "address", "nbytes", "use_count",
                 "references")

    def __init__(self, torch, tensor):
        self.tensor = tensor
        self.storage = tensor.untyped_storage()
        self.storage_address = self.storage._cdata
        self.address = tensor.data_ptr()
        self.nbytes = self.storage.nbytes()
        self.use_count = _use_count(torch)
        # The storage's Python object is one per storage, this very one: a caller holding
        # r.untyped_storage() (not r) holds it, which the use count does not see (the next
        # call wrote into the storage it kept); the object's references do.
        self.references = sys.getrefcount(self.storage)

    def only_pool_holds(self):
        """Whether kiln may write it: nothing outside the pool holds it, and its memory is
        where it was (a caller's r.resize_(n) or r.untyped_storage().resize_(0) moved or freed
        the storage it shared: writes to the old address went to freed memory, and the tensor
        returned held stale values)."""
        return (self.use_count(self.storage_address) <= 2
                and sys.getrefcount(self.storage) <= self.references
                and self.tensor.data_ptr() == self.address
                and self.storage.nbytes() == self.nbytes)


def _all_free(taken):
    """Whether kiln may write every PooledResult of `taken` (a loop: all() of a generator cost
    a third of a one-result take)."""
    for free in taken:
        if not free.only_pool_holds():
            return False
    return True


def _use_count(torch):
    """A storage's use count by its address; torch builds without the counter: never free,
    every call a new tensor."""
    return getattr(torch._C, "_storage_Use_Count", lambda storage: 3)


class ResultPool:
    """The pools of one compiled graph's results: `specs` (shape, torch dtype[, order]) per
    result (None: no tensor, kiln writes that result into an input), where an order is the
    permutation callers see the row-major result through (a channels-last activation returned
    in its logical (N, C, ...) order): the pooled tensor has the permuted shape and strides
    over that row-major memory, so a call returns it with no permute."""
    __slots__ = ("torch", "compiled", "specs", "device", "pools", "recent", "lock", "places",
                 "count")

    def __init__(self, torch, compiled, specs, device):
        self.count = len(specs)
        # the results with tensors, by position among all (None: every one has)
        self.places = [k for k, spec in enumerate(specs) if spec is not None]
        if len(self.places) == self.count:
            self.places = None
        specs = [spec for spec in specs if spec is not None]
        self.torch, self.compiled, self.specs, self.device = torch, compiled, specs, device
        self.pools = [[] for _ in specs]
        # The last two calls' takes (lists of PooledResults): a training step's forward takes
        # the same results every call, `y = f(x)` alternates between two.
        self.recent = []
        # Calls from several threads: a tensor is free until its alias exists, so choosing it
        # and making the alias happen under this lock (else two calls took the same tensor
        # and wrote each other's results into it).
        self.lock = threading.Lock()

    def take(self):
        """(Per result, the PooledResult this call writes; the detached aliases of their
        tensors the caller returns), the aliases made before any other call can take them."""
        with self.lock:
            taken = self._take()
            return taken, [free.tensor.detach() for free in taken]

    def take_all(self):
        """take() laid out over all the results: (addresses, tensors), 0 and None for those
        with no tensor (written into an input)."""
        taken, results = self.take()
        if self.places is None:
            return [free.address for free in taken], results
        addresses, every = [0] * self.count, [None] * self.count
        for place, free, result in zip(self.places, taken, results):
            addresses[place], every[place] = free.address, result
        return addresses, every

    def _take(self):
        for taken in self.recent:  # one pass over the storages, not a pool walk each
            if _all_free(taken):
                self._remember(taken)
                return taken
        taken = []
        for pooled, spec in zip(self.pools, self.specs):
            for free in pooled:
                if free.only_pool_holds():
                    break
            else:
                free = PooledResult(self.torch, self._new_tensor(*spec))
                pooled.insert(0, free)
                if len(pooled) > _POOLED_RESULTS:  # a dropped tensor is not taken again
                    del pooled[_POOLED_RESULTS:]
                    self.recent.clear()
            taken.append(free)
        self._remember(taken)
        return taken

    def _remember(self, taken):
        if self.recent and self.recent[0] is taken:
            return
        self.recent.insert(0, taken)
        del self.recent[2:]

    def _new_tensor(self, shape, dtype, order=None):
        # A normal tensor even under inference_mode: a later call outside it reuses it.
        with self.torch.inference_mode(False):
            if order is None:
                return self.torch.empty(shape, dtype=dtype, device=self.device)
            # Strided from the start, not a permute's view: a view holds its base, whose
            # reference would keep the storage's use count above 2 for good.
            strides = [1] * len(shape)
            for d in range(len(shape) - 2, -1, -1):
                strides[d] = strides[d + 1] * shape[d + 1]
            return self.torch.empty_strided([shape[axis] for axis in order],
                                            [strides[axis] for axis in order],
                                            dtype=dtype, device=self.device)
