"""The decomposition tables the torch backend builds once per process, built without the slow
sweeps they replaced (kiln.torch._backend.core_aten_table, kiln.torch._foreach._foreach_ops):
the same aten entries as PyTorch's materialised Core ATen table and the same foreach overloads
as every schema names, and another namespace's CompositeImplicitAutograd op, left out of the
table, still decomposes in the trace and compiles whole."""
import functools

import torch
from torch._decomp import core_aten_decompositions

import kiln.torch  # noqa: F401
from kiln.torch._backend import core_aten_table, decompositions
from kiln.torch._foreach import foreach_decompositions
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)

aten = torch.ops.aten


def test_core_table_holds_every_aten_entry_of_the_materialised_table():
    materialised = dict(core_aten_decompositions())
    aten_entries = {op: function for op, function in materialised.items()
                    if op.namespace == "aten"}
    table = core_aten_table()
    assert set(table) == set(aten_entries)
    assert all(_same_decomposition(table[op], function) for op, function in aten_entries.items())


def _same_decomposition(first, second):
    """The same function, or the same code bound to the same op (each table makes its own
    partials of a new closure that runs an op's CompositeImplicitAutograd kernel)."""
    if isinstance(first, functools.partial) and isinstance(second, functools.partial):
        return (first.func.__code__ is second.func.__code__ and first.args == second.args
                and first.keywords == second.keywords)
    return first is second


def test_foreach_table_covers_every_functional_overload_that_schemas_name():
    expected = set()
    for schema in torch._C._jit_get_all_schemas():
        name, overload = schema.name, schema.overload_name
        if (name.startswith("aten::_foreach_") and not name.endswith("_")
                and not overload.endswith("out") and name != "aten::_foreach_powsum"):
            expected.add(getattr(getattr(aten, name[len("aten::"):]), overload or "default"))
    assert set(foreach_decompositions()) == expected


_LIBRARY = torch.library.Library("kiln_test_tables", "DEF")
_LIBRARY.define("shifted_scale(Tensor x, float factor) -> Tensor")
_LIBRARY.impl("shifted_scale", lambda x, factor: x * factor + 1.0, "CompositeImplicitAutograd")


def test_other_namespaces_composite_op_decomposes_without_a_table_entry():
    op = torch.ops.kiln_test_tables.shifted_scale.default
    assert op not in decompositions()

    def function(x):
        return torch.ops.kiln_test_tables.shifted_scale(x, 0.5).sin()
    x = torch.randn(6, 7)
    compiled = torch.compile(function, backend="kiln", options={"unsupported_ops": "error"})
    torch.testing.assert_close(compiled(x), function(x))
