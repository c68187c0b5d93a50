"""The container items and attribute names a loop's statements assign (`xs[k] = v`, `p.x = v`),
which the loop rewrite (kiln._loop_transform) passes to its capture as `items=` and
`attributes=`: kiln._loop_container_items and kiln._loop_object_attributes carry them. Apart
from those, which need kiln._loop_escapes, so that the rewrite imports no part of the capture."""
import ast


def attribute_targets(statements):
    """The attribute names `statements` assign (`p.x = v`, `a.b.c += 1`: c), in nested loops
    and branches too."""
    return tuple(sorted({node.attr for statement in statements for node in ast.walk(statement)
                         if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)}))


def attributes_argument(statements):
    """`, attributes=(...)` of a loop's call (LoopCapture.for_range, while_loop), or nothing."""
    names = attribute_targets(statements)
    return f", attributes={names!r}" if names else ""


def item_targets(statements, assigned):
    """The names whose items `statements` assign (`xs[k] = v`, `d["n"] += v`, `a, xs[0] = ..`,
    in nested loops and branches too) and do not rebind (`assigned`): kiln._loop_transform
    hands them to the loop's capture. A name of an array is among them too; only a list or a
    dict it holds when the loop starts is carried."""
    found = set()
    for statement in statements:
        for node in ast.walk(statement):
            if (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store)
                    and isinstance(node.value, ast.Name)):
                found.add(node.value.id)
    return tuple(sorted(found - set(assigned)))


def items_argument(statements, assigned):
    """`, items=(...)` of a loop's call (LoopCapture.for_range, while_loop), or nothing."""
    names = item_targets(statements, assigned)
    return f", items={names!r}" if names else ""
