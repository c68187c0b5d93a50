"""Which names of a function a loop or branch of it reads, binds and carries, as
kiln._loop_transform rewrites them for capture: read from the source's syntax (the rewrite's
helper checks the values at run time)."""
import ast

from ._loop_rewrite_parts import _parameters, _walk_scope
from ._loop_scope_reads import comprehension_bindings, enclosing_reads


def _only_called(name, definition):
    """Whether every read of `name` in `definition` calls it: a nested function that escapes
    (returned, stored, passed on) may run after the trace, where kiln's helper has none."""
    calls = {id(node.func) for node in ast.walk(definition) if isinstance(node, ast.Call)}
    return all(id(node) in calls for node in ast.walk(definition)
               if isinstance(node, ast.Name) and node.id == name
               and isinstance(node.ctx, ast.Load))


def _stored_names(statements):
    """Names the statements bind (`:=` in their comprehensions too), sorted."""
    names = []
    for node in _walk_scope(statements):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id not in names:
            names.append(node.id)
    return sorted(set(names) | comprehension_bindings(statements))


def _read_names(statements):
    return sorted({node.id for node in _walk_scope(statements)
                   if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)})


def _loaded_names(definition):
    """How often each of the function's variables is read in it (free reads in nested scopes
    included; a comprehension's or lambda's own names are not the function's)."""
    counts = {}
    for node in enclosing_reads(definition.body):
        counts[node.id] = counts.get(node.id, 0) + 1
    return counts


def _augmented_names(tree):
    """How often each name is the target of an augmented assignment in `tree` (which reads
    it: `last += 1` writes through a view, as `last[...] = v` does)."""
    counts = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            counts[node.target.id] = counts.get(node.target.id, 0) + 1
    return counts


def _index_reads(definition):
    """How often each name is read outside the bodies of the for loops it is the index of (a
    loop's own reads, and those of a later loop over the same name, follow a binding)."""
    bound = set()
    for node in ast.walk(definition):
        if isinstance(node, ast.For) and isinstance(node.target, ast.Name):
            bound.update(id(read) for statement in node.body for read in ast.walk(statement)
                         if isinstance(read, ast.Name) and read.id == node.target.id)
    counts = {}
    for node in enclosing_reads(definition.body):  # (a comprehension's own `i` is not read)
        if id(node) not in bound:
            counts[node.id] = counts.get(node.id, 0) + 1
    return counts


def _read_before_bound(name, statements):
    """Whether a loop body may read `name` before it binds it (the value of the iteration
    before): a read in or before the first statement that binds it unconditionally (a plain
    `name = value` of the body's own statements)."""
    for statement in statements:
        if any(isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)
               for node in ast.walk(statement)):  # (a comprehension's reads too)
            return True
        if isinstance(statement, ast.Assign) and any(
                isinstance(target, ast.Name) and target.id == name
                for target in statement.targets):
            return False
    return False


def _temporaries_argument(assigned, live, statements):
    """`, temporaries=(...)` of a loop's call: the names it assigns that nothing after it
    reads and every iteration binds before reading (`head, *tail = row`), whose values from
    an iteration run as Python the body's trace does without (LoopCapture._capture)."""
    names = tuple(name for name in assigned if name not in live
                  and _bound_before_read(name, statements))
    return f", temporaries={names!r}" if names else ""


def _bound_before_read(name, statements):
    """Whether a plain assignment among `statements` (`name = ...`, `a, *name = ...`) binds
    `name` before any of them reads it."""
    for statement in statements:
        if any(isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)
               for node in ast.walk(statement)):
            return False
        if isinstance(statement, ast.Assign) and any(
                isinstance(node, ast.Name) and node.id == name
                for target in statement.targets for node in _unpacked(target)):
            return True
    return False


def _unpacked(target):
    """The names and other targets a (nested, starred) tuple or list target unpacks into."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return [node for element in target.elts for node in _unpacked(element)]
    if isinstance(target, ast.Starred):
        return _unpacked(target.value)
    return [target]


def nested_rebinds(definition):
    """{name of a function `definition` defines: the variables of `definition` that calling it
    may rebind, through its `nonlocal` declarations or those of the functions it names}, or
    None where a function that may rebind them can be called unseen (passed on, stored, named
    by a lambda, a method of a class defined here). A loop or branch whose body calls such a
    function (`def step(v): nonlocal count; count += 1`, then `x = step(x)` in a loop) carries
    those variables as if it assigned them: traced once, the call rebound them once (a count
    of 1 after 10 iterations, no error, where the function was defined in an `if`)."""
    functions, local = {}, _parameters(definition)
    for node in _own_scope(definition.body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            local.add(node.name)
            if isinstance(node, ast.ClassDef):
                if any(isinstance(part, ast.Nonlocal) for part in ast.walk(node)):
                    return None
            else:
                functions.setdefault(node.name, []).append(node)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            local.add(node.id)
    rebinds = {name: {variable for function in defined for part in ast.walk(function)
                      if isinstance(part, ast.Nonlocal) for variable in part.names} & local
               for name, defined in functions.items()}
    calls = {name: {part.id for function in defined for part in ast.walk(function)
                    if isinstance(part, ast.Name) and part.id in functions}
             for name, defined in functions.items()}
    changed = True
    while changed:  # through the functions each names, and theirs
        changed = False
        for name, called in calls.items():
            reached = set().union(rebinds[name], *(rebinds[other] for other in called))
            changed |= reached != rebinds[name]
            rebinds[name] = reached
    in_lambdas = {part.id for node in ast.walk(definition) if isinstance(node, ast.Lambda)
                  for part in ast.walk(node) if isinstance(part, ast.Name)}
    rebinding = {name: frozenset(names) for name, names in rebinds.items() if names}
    if any(name in in_lambdas or not _only_called(name, definition) for name in rebinding):
        return None
    return rebinding


def rebound_by_calls(statements, rebinds):
    """The variables the functions `statements` name may rebind (nested_rebinds' `rebinds`)."""
    names = {part.id for statement in statements for part in ast.walk(statement)
             if isinstance(part, ast.Name)}
    return sorted(set().union(*(rebinds[name] for name in names & rebinds.keys())))


def _own_scope(statements):
    """The nodes of `statements` in the function's own scope: functions, classes, lambdas and
    comprehensions are yielded but not entered (their names are their own)."""
    stack = list(statements)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                 ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                                 ast.GeneratorExp)):
            stack.extend(ast.iter_child_nodes(node))
