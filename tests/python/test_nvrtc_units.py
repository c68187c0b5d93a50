"""The CUDA source in NVRTC units without a GPU (kiln._kiln.cuda_source_parts, cuda_unit_plan:
what kiln.bench.nvrtc_units measures): the parts are the source, every function in exactly one
unit, the costliest alone."""
import kiln
from kiln.bench import nvrtc_units


def _traced():
    trace = kiln._kiln.Trace()
    x = trace.input("float32", [1024, 768])
    y = kiln._kiln.sin(kiln._kiln.add(x, x))
    z = kiln._kiln.add(kiln._kiln.cos(x), y)
    return trace, [y, z, kiln._kiln.exp(z)]


def test_the_parts_are_the_source_and_every_function_is_in_one_unit():
    trace, outputs = _traced()
    parts = kiln._kiln.cuda_source_parts(trace, outputs)
    assert parts["header"] + "".join(parts["functions"]) == kiln._kiln.cuda_source(trace, outputs)
    assert len(parts["costs"]) == len(parts["functions"]) >= 1
    assert all(cost > 0 for cost in parts["costs"])
    costs = [5000, 90000, 7000, 7000, 30000, 1000, 60000, 2000, 2000]
    plan = kiln._kiln.cuda_unit_plan(costs, 16)
    assert sorted(k for unit in plan for k in unit) == list(range(len(costs)))
    assert [1] in plan  # the costliest alone
    assert plan == kiln._kiln.cuda_unit_plan(costs, 16)


def test_the_bench_puts_back_what_kiln_capped():
    capped = "#pragma unroll 4  // (NVRTC's time)\nfor (int i0_step = 0; i0_step < 24; ++i0_step) {"
    assert nvrtc_units.uncapped(capped).startswith("#pragma unroll\nfor (int i0_step")
    assert nvrtc_units.source_order_units(5, 2) == [[0, 1], [2, 3, 4]]
