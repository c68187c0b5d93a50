"""kiln.device: where kiln-compiled NumPy functions run when kiln.compile names no device.

    with kiln.device("cuda"):
        labels = kmeans(points, means)   # a kiln.compile'd function, on the GPU

The current device is part of every such function's guard (read like a global it uses): a call
under another device compiles for that device once, and both stay cached. The setting is the
process's, like a global (a thread entering the block changes it for every thread).
"""

DEVICES = ("cpu", "cuda")

# The guard reads _state["current"] (kiln._compile.CompiledFunction): None means "cpu".
_state = {"current": None}


def current_device():
    """The device kiln.compile'd functions without device= run on now: 'cpu' or 'cuda'."""
    return _state["current"] or "cpu"


def check_device(name):
    if name not in DEVICES:
        raise ValueError(f"kiln: unknown device {name!r} (valid: {', '.join(DEVICES)})")
    return name


class device:
    """Context manager: kiln.compile'd functions that name no device run on `name` inside it."""

    def __init__(self, name):
        self.name = check_device(str(name))
        self._saved = []

    def __enter__(self):
        self._saved.append(_state["current"])
        _state["current"] = self.name
        return self

    def __exit__(self, *exc):
        _state["current"] = self._saved.pop()
        return False

    def __repr__(self):
        return f"kiln.device({self.name!r})"


def torch_current_stream(torch, device):
    """torch's current CUstream on CUDA `device`, as an integer: the raw getter Inductor's
    kernels use (no Stream object per call) where the build has it."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None and device.index is not None:
        return raw(device.index)
    return torch.cuda.current_stream(device).cuda_stream
