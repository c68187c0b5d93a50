"""kiln as a torch.compile backend: Dynamo captures, AOTAutograd hands over functionalised ATen
forward/backward (or inference) graphs, kiln compiles each.

    torch.compile(model, backend="kiln", mode="max-autotune", options={"num_threads": 2})

`mode` and `options` are kiln's words (kiln.list_mode_options(), kiln.list_options()).
"""
import itertools

import torch
from torch._decomp import core_aten_decompositions
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.partitioners import min_cut_rematerialization_partition

from .. import _kiln
from .._config import config
from ._aten_table import TABLE
from ._partition import compile_graph_module

_graph_numbers = itertools.count()


def decompositions():
    """The decomposition table kiln asks AOTAutograd for: PyTorch's Core ATen decompositions,
    except for the ops kiln's conversion table lowers itself (its own lowering fuses better)."""
    return {op: function for op, function in core_aten_decompositions().items()
            if op not in TABLE}


def _settings(mode, options):
    options = dict(options or {})
    options.setdefault("mode", mode or "default")
    if config.cache_dir is not None:
        options.setdefault("cache_dir", str(config.cache_dir))
    _kiln.check_options(options)  # unsupported_ops too: one list of options, kiln.list_options()
    return options, options.pop("unsupported_ops", "eager")


def backend(graph_module, example_inputs, mode=None, options=None):
    """The torch.compile backend (also registered under the name "kiln")."""
    kiln_options, unsupported_ops = _settings(mode, options)
    number = next(_graph_numbers)

    def compiler(kind):
        def compile_one(aten_graph, inputs):
            return compile_graph_module(aten_graph, inputs, kiln_options, unsupported_ops,
                                        f"{kind}{number}")
        return compile_one

    return aot_autograd(fw_compiler=compiler("forward"), bw_compiler=compiler("backward"),
                        inference_compiler=compiler("inference"),
                        decompositions=decompositions(),
                        partition_fn=min_cut_rematerialization_partition)(
        graph_module, example_inputs)
