"""The systems measured side by side: eager NumPy, kiln, torch.compile on the NumPy code, eager
PyTorch, JAX jit and Numba.

A baseline is optional: `unavailable()` says why it cannot run here (a package that is not
installed), and the harness skips it with that message. `prepare(workload, inputs)` converts
the inputs once (outside the timings: torch.from_numpy, jax device arrays) and returns a
Prepared whose `call()` runs the program once to completion (JAX's asynchronous dispatch is
waited for) and whose `to_numpy()` turns a result into a NumPy array for the correctness check.
"""
import dataclasses
import importlib
import types
from typing import Callable

import numpy as np


@dataclasses.dataclass
class Prepared:
    """A baseline ready to run: `call(*converted inputs)`; `convert` turns a tuple of NumPy
    inputs into what call takes (device arrays, tensors), once per input set, untimed."""
    call: Callable[..., object]
    to_numpy: Callable[[object], np.ndarray] = np.asarray
    convert: Callable[[tuple], tuple] = tuple


def fresh_function(function):
    """A copy of function with its own code object. torch.compile (Dynamo) keeps its cache on
    the code object, and two workloads share one NumPy program (sin_cos on 0-d and on 16M
    elements; kmeans on float64 and float32): without a fresh copy the second would see the
    first one's cache and compile a dynamic-shape graph, not what a user's program gets."""
    return types.FunctionType(function.__code__.replace(), function.__globals__,
                              function.__name__, function.__defaults__, function.__closure__)


def _translation(module_name, workload):
    module = importlib.import_module(f"kiln.bench.{module_name}")
    return getattr(module, workload.name, None)


class Baseline:
    name = ""
    label = ""
    needs = ()  # modules that must import

    def unavailable(self):
        """None when it can run here, else the reason it is skipped."""
        for module in self.needs:
            try:
                importlib.import_module(module)
            except Exception as error:  # ImportError, or a broken install that raises anything
                return f"{module} is not importable ({type(error).__name__}: {error})"
        return None

    def unsupported(self, workload):
        """None when this baseline has a version of the workload, else why not."""
        return None

    def prepare(self, workload):
        raise NotImplementedError

    def version(self):
        module = importlib.import_module(self.needs[0]) if self.needs else None
        return getattr(module, "__version__", "") if module else ""


class NumpyBaseline(Baseline):
    name, label, needs = "numpy", "NumPy (eager)", ("numpy",)

    def prepare(self, workload):
        return Prepared(workload.function)


class KilnBaseline(Baseline):
    name, label, needs = "kiln", "kiln.compile", ("kiln",)

    def __init__(self, mode="default", device="cpu"):
        self.mode = mode
        self.device = device

    def prepare(self, workload):
        import kiln
        options = {"device": self.device} if self.device != "cpu" else None
        return Prepared(kiln.compile(fresh_function(workload.function), mode=self.mode,
                                     options=options))

    def explain(self, workload, inputs):
        """Graph and graph-break counts: a graph break runs part of the program in NumPy, which
        the reader of a speed-up must know."""
        import kiln
        explained = kiln.explain(fresh_function(workload.function), mode=self.mode)(*inputs)
        return {"graphs": explained.graph_count, "graph_breaks": explained.graph_break_count,
                "kernels": list(explained.kernels),
                "break_reasons": [str(reason) for reason in explained.break_reasons]}


class TorchCompileBaseline(Baseline):
    """torch.compile (Dynamo + Inductor) on the unchanged NumPy program, as in PyTorch's
    "torch.compile with NumPy" tutorial: NumPy arrays in, NumPy arrays out."""
    name, label, needs = "torch.compile", "torch.compile (Inductor)", ("torch",)

    def prepare(self, workload):
        import torch
        return Prepared(torch.compile(fresh_function(workload.function)))


def _torch_to_numpy(result):
    import torch
    if isinstance(result, torch.Tensor):
        return result.detach().cpu().numpy()
    return np.asarray(result)


class TorchEagerBaseline(Baseline):
    name, label, needs = "torch", "PyTorch (eager)", ("torch",)

    def unsupported(self, workload):
        if _translation("torch_kernels", workload) is None:
            return "no PyTorch translation"
        return None

    def prepare(self, workload):
        import torch
        # np.ascontiguousarray would turn a 0-d array into a 1-d one.
        def tensors(arrays):
            return tuple(torch.from_numpy(array if array.flags.c_contiguous else array.copy())
                         for array in arrays)
        return Prepared(_translation("torch_kernels", workload), _torch_to_numpy, tensors)


class JaxBaseline(Baseline):
    name, label, needs = "jax", "JAX jit", ("jax",)

    def unsupported(self, workload):
        if _translation("jax_kernels", workload) is None:
            return "no jax.numpy translation"
        return None

    def prepare(self, workload):
        import jax
        function = jax.jit(_translation("jax_kernels", workload))  # x64 enabled on import

        def on_device(arrays):
            return tuple(jax.block_until_ready([jax.device_put(array) for array in arrays]))
        return Prepared(lambda *arrays: jax.block_until_ready(function(*arrays)),
                        convert=on_device)

    def version(self):
        import jax
        return jax.__version__


class NumbaBaseline(Baseline):
    name, label, needs = "numba", "Numba njit(parallel)", ("numba",)

    def unsupported(self, workload):
        if _translation("numba_kernels", workload) is None:
            return "no Numba version"
        return None

    def prepare(self, workload):
        return Prepared(_translation("numba_kernels", workload))


ORDER = ("numpy", "kiln", "torch.compile", "torch", "jax", "numba")
ALIASES = {  # --baselines words: "torch" means both of PyTorch's ways, as the issue lists it
    "numpy": ("numpy",), "kiln": ("kiln",), "torch": ("torch.compile", "torch"),
    "torch.compile": ("torch.compile",), "torch_compile": ("torch.compile",),
    "inductor": ("torch.compile",), "torch_eager": ("torch",), "jax": ("jax",),
    "numba": ("numba",), "all": ORDER,
}


def make(names, kiln_mode="default", device="cpu"):
    """Baseline objects for a comma list of --baselines words, in ORDER; NumPy is always
    included because every speed-up and every correctness check is relative to it."""
    wanted = {"numpy"}
    for word in (part.strip() for part in names.split(",")):
        if not word:
            continue
        if word not in ALIASES:
            raise ValueError(f"unknown baseline {word!r}; known: {', '.join(ALIASES)}")
        wanted.update(ALIASES[word])
    classes = {"numpy": NumpyBaseline, "torch.compile": TorchCompileBaseline,
               "torch": TorchEagerBaseline, "jax": JaxBaseline, "numba": NumbaBaseline}
    result = []
    for name in ORDER:
        if name in wanted:
            result.append(KilnBaseline(kiln_mode, device) if name == "kiln" else classes[name]())
    return result
