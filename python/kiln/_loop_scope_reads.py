"""The reads of a function's own variables, as Python's scopes decide them, for the liveness of
a loop's names (kiln._loop_transform: `live`, the names read after the loop).

A comprehension, generator expression or lambda is a scope of its own: its targets and
parameters are not the function's variables, so `[p.x for p in particles]` after
`for p in particles:` does not read the loop's `p` (counted as a read, `p` was live and the
loop refused: "the loop changes the Python value of `p`"). Free names in such a scope still
read the function's variables, and a `:=` inside a comprehension binds in the function (its
later reads there read the function's variable). Unsure is counted as a read: a name wrongly
live costs a result of the loop or a refusal, one wrongly dead a wrong answer."""
import ast

_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def enclosing_reads(nodes, eager_only=False):
    """The Name nodes under `nodes` (in the function's own scope) that read the function's
    variables. eager_only: not those in lambdas, nested functions and generator expressions
    (run whenever they are called or consumed, perhaps after the loop that holds them)."""
    reads = []
    for node in nodes:
        _visit(node, frozenset(), eager_only, reads)
    return reads


def _visit(node, local, eager_only, reads):
    """Append to `reads` the reads of the function's variables under `node`, where `local`
    are the names the scopes between bind for themselves."""
    if isinstance(node, ast.Name):
        if isinstance(node.ctx, ast.Load) and node.id not in local:
            reads.append(node)
        return
    if isinstance(node, _COMPREHENSIONS):
        # the first iterable is evaluated where the comprehension stands (and at once)
        _visit(node.generators[0].iter, local, eager_only, reads)
        if eager_only and isinstance(node, ast.GeneratorExp):
            return
        inner = local | {name.id for generator in node.generators
                         for name in ast.walk(generator.target) if isinstance(name, ast.Name)}
        parts = [node.generators[0].target, *node.generators[0].ifs]
        for generator in node.generators[1:]:
            parts += [generator.iter, generator.target, *generator.ifs]
        parts += [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        for part in parts:
            _visit(part, inner, eager_only, reads)
        return
    if isinstance(node, _FUNCTIONS + (ast.ClassDef,)):
        # decorators, defaults, annotations and bases are evaluated where the definition is
        outside = list(getattr(node, "decorator_list", ()))
        if isinstance(node, ast.ClassDef):
            outside += node.bases + [keyword.value for keyword in node.keywords]
        else:
            arguments = node.args
            outside += arguments.defaults + [d for d in arguments.kw_defaults if d is not None]
            if not isinstance(node, ast.Lambda):
                outside += [a.annotation for a in _parameters(arguments) if a.annotation]
                outside += [node.returns] if node.returns else []
        for part in outside:
            _visit(part, local, eager_only, reads)
        if eager_only and isinstance(node, _FUNCTIONS):
            return
        body = node.body if isinstance(node.body, list) else [node.body]
        inner = local if isinstance(node, ast.ClassDef) else local | _function_locals(node)
        for statement in body:
            _visit(statement, inner, eager_only, reads)
        return
    for child in ast.iter_child_nodes(node):
        _visit(child, local, eager_only, reads)


def _parameters(arguments):
    return [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
            *(a for a in (arguments.vararg, arguments.kwarg) if a is not None)]


def _function_locals(function):
    """The names a nested function or lambda binds for itself: its parameters and the names
    its own scope binds (`:=` in its comprehensions too), less those it declares nonlocal;
    its `global` names are not the enclosing function's either."""
    names = {argument.arg for argument in _parameters(function.args)}
    nonlocal_names = set()
    body = function.body if isinstance(function.body, list) else [function.body]
    stack = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Nonlocal):
            nonlocal_names.update(node.names)
        elif isinstance(node, ast.Global):
            names.update(node.names)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
        if isinstance(node, _COMPREHENSIONS):  # only its `:=` targets bind here
            stack.extend(n.target for n in ast.walk(node) if isinstance(n, ast.NamedExpr)
                         and not _inside_function(n, node))
        elif not isinstance(node, _FUNCTIONS + (ast.ClassDef,)):
            stack.extend(ast.iter_child_nodes(node))
    return names - nonlocal_names


def _inside_function(target, comprehension):
    """Whether `target` (under `comprehension`) stands in a lambda within it (its own scope)."""
    return any(target in ast.walk(node) for node in ast.walk(comprehension)
               if isinstance(node, ast.Lambda))


def comprehension_bindings(statements):
    """The names `:=` binds in the comprehensions of `statements` (outside nested functions,
    lambdas and classes): they bind in the function, so `[(s := s * 0.5 + w) for w in ws]`
    in a loop body rebinds the loop's `s` (left out of the body's names, its function bound
    `s` for itself: "cannot access free variable 's'")."""
    names, stack = set(), list(statements)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        if not isinstance(node, _FUNCTIONS + (ast.ClassDef,)):
            stack.extend(ast.iter_child_nodes(node))
    return names
