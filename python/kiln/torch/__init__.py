"""kiln's PyTorch front end: a torch.compile backend.

    import torch
    model = torch.compile(model, backend="kiln")          # registered by entry point
    model = torch.compile(model, backend=kiln.torch.backend, mode="reduce-overhead")

Dynamo captures the Python code (graph breaks, guards and recompiles are Dynamo's, as
TORCH_LOGS shows them); AOTAutograd hands kiln functionalised ATen graphs (inference, or
forward and backward for training); kiln converts them through one table of ATen overloads
(kiln.torch.supported_ops()) and compiles them. Ops outside the table run in eager PyTorch
between compiled parts (KILN_LOGS=graph_breaks names them; options={"unsupported_ops":
"error"} raises instead).
"""
from ._aten_table import TABLE
from ._backend import backend, decompositions


def supported_ops():
    """The ATen overloads kiln's conversion table lowers, as sorted names."""
    return sorted(str(op) for op in TABLE)


__all__ = ["backend", "decompositions", "supported_ops"]
