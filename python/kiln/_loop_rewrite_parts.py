"""AST parts of kiln._loop_transform: the helper's name and the node builders its rewrites
are made of, and two rewrites of its own:

- sequence_loop: `for v in x:` (and `for i, v in enumerate(x)`, `for a, b in zip(x, y)`) as a
  range loop that indexes x where x is a traced array when the loop runs, so that it is
  captured as any range loop;
- the arguments that may be lists in calls of a (dotted) name (`np.mean([a, b], axis=0)`), to
  the helper's listed(callee, argument) (kiln._numpy_sequences): _list_names, _dotted_name.
"""
import ast
import copy

HELPER = "__kiln_loops__"


def _name(identifier, context=None):
    return ast.Name(id=identifier, ctx=context or ast.Load())


def _parse(text):
    return ast.parse(text).body


def each_statement_rewritten(statements, rewrite):
    """`statements` (a function body) with each statement replaced by the list rewrite(node)
    gives, the blocks of compound statements rewritten first (inner loops before the loops
    that hold them); nested functions and classes are left to their own rewrite."""
    result = []
    for node in statements:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            result.append(node)
            continue
        for field in ("body", "orelse", "finalbody"):
            if isinstance(getattr(node, field, None), list):
                setattr(node, field, each_statement_rewritten(getattr(node, field), rewrite))
        for handler in getattr(node, "handlers", ()):
            handler.body = each_statement_rewritten(handler.body, rewrite)
        result.extend(rewrite(node))
    return result


def _helper_call(text, node):
    """The expression `HELPER.text` standing for `node`: every part of it at node's place in
    the user's source, so that errors and graph breaks inside the helper name that line."""
    call = _parse(f"{HELPER}.{text}")[0].value
    for part in ast.walk(call):
        ast.copy_location(part, node)
    return call


def _parameters(definition):
    a = definition.args
    names = [arg.arg for arg in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    names += [arg.arg for arg in (a.vararg, a.kwarg) if arg is not None]
    return set(names)


def _walk_scope(statements):
    """Every node of `statements`, not descending into nested functions, classes, lambdas and
    comprehensions (their names are their own)."""
    stack = list(statements)
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                      ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                                      ast.GeneratorExp)):
                stack.append(child)


def _at(new, old):
    """`new` (and everything in it) at the line of `old`."""
    if old is not None:
        for node in ast.walk(new):
            if hasattr(node, "lineno"):
                node.lineno = getattr(old, "lineno", 1)
                node.end_lineno = getattr(old, "end_lineno", node.lineno)
                node.col_offset = getattr(old, "col_offset", 0)
                node.end_col_offset = getattr(old, "end_col_offset", 0)
    return new


def sequence_loop(rewriter, node):
    """`for v in x:`, `for i, v in enumerate(x):`, `for a, b in zip(x, y):` (and enumerate of
    a zip): where every sequence is a traced array when the loop runs, the loop over
    range(len) that indexes them (`v = x[i]`), captured as any range loop; otherwise the
    loop as written. Tracing unrolled such a loop: 100,000 elements took 34 s to trace,
    then ran eagerly. None for other forms."""
    sequences, names, index = _sequence_loop_parts(node.target, node.iter)
    if sequences is None:
        return None
    rewriter.counter += 1
    n = rewriter.counter
    held = [f"__kiln_sequence_{n}_{k}" for k in range(len(sequences))]
    # a body that writes no array (it only binds names: no augmented assignment, `row += y`
    # writes through a view; no out=; no call that may write, `bump(x)`, `v.fill(0)`) cannot
    # change the sequences, and where nothing anywhere writes through the rows it binds
    # (`last = v`, then `last[0] = 9`), a view among them (`for v in x[1:]`, which the loop
    # could not carry) is iterated as a copy (kiln._loop_aliases; `changes` may name global
    # functions whose code decides it when the loop runs)
    changes = rewriter.in_place.sequence_changes(node, names)
    assign = [_at(ast.Assign(targets=[_name(h, ast.Store())], value=ast.Call(
        func=_parse(f"{HELPER}.sequence")[0].value, args=[sequence, ast.Constant(changes)],
        keywords=[])), node) for h, sequence in zip(held, sequences)]
    rewriter.held.update(zip(held, sequences))  # (carried_views: `v` is a view of x)
    item = f"__kiln_item_{n}"
    prologue = [ast.Assign(targets=[_name(name, ast.Store())], value=ast.Subscript(
        value=_name(h), slice=_name(item), ctx=ast.Load())) for name, h in zip(names, held)]
    if index is not None:
        name, start = index
        prologue.insert(0, ast.Assign(targets=[_name(name, ast.Store())], value=ast.BinOp(
            left=_name(item), op=ast.Add(), right=ast.Constant(value=start))))
    indexed = ast.For(
        target=_name(item, ast.Store()),
        iter=_parse(f"range({HELPER}.sequence_length({', '.join(held)}))")[0].value,
        body=[_at(statement, node) for statement in prologue] + copy.deepcopy(node.body),
        orelse=[], type_comment=None)
    as_written = copy.copy(node)  # over the held sequences: each evaluated once
    as_written.iter = _replace_sequences(copy.deepcopy(node.iter), sequences, held)
    as_written._kiln_as_written = True
    as_written.body = rewriter.statements(copy.deepcopy(node.body))
    ast.copy_location(indexed, node)
    _at(indexed.iter, node)
    test = _at(_parse(f"{HELPER}.traced_sequences({', '.join(held)})")[0].value, node)
    choice = ast.copy_location(
        ast.If(test=test, body=rewriter.loop(indexed), orelse=[as_written]), node)
    return assign + [choice]


def _sequence_loop_parts(target, iterator):
    """(sequence expressions, the names their items go to, (index name, start) or None) of a
    `for` over sequences, or (None, None, None)."""
    def call_of(node, name):
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id == name and not any(isinstance(a, ast.Starred)
                                                     for a in node.args))
    index = None
    if call_of(iterator, "enumerate") and isinstance(target, ast.Tuple) and len(
            target.elts) == 2 and isinstance(target.elts[0], ast.Name):
        start = 0
        if len(iterator.args) == 2 and not iterator.keywords and isinstance(
                iterator.args[1], ast.Constant) and type(iterator.args[1].value) is int:
            start = iterator.args[1].value
        elif len(iterator.args) != 1 or iterator.keywords:
            return None, None, None
        index = (target.elts[0].id, start)
        target, iterator = target.elts[1], iterator.args[0]
    if call_of(iterator, "zip") and not iterator.keywords and isinstance(
            target, ast.Tuple) and len(target.elts) == len(iterator.args) >= 1:
        if not all(isinstance(t, ast.Name) for t in target.elts):
            return None, None, None
        return list(iterator.args), [t.id for t in target.elts], index
    if isinstance(target, ast.Name) and not call_of(iterator, "range") and not call_of(
            iterator, "zip") and not call_of(iterator, "enumerate"):
        return [iterator], [target.id], index
    return None, None, None


def _replace_sequences(iterator, sequences, held):
    """The loop's iterable with each sequence expression read from the name holding it."""
    replacements = {ast.dump(sequence): h for sequence, h in zip(sequences, held)}

    class Replace(ast.NodeTransformer):
        def visit(self, node):
            name = replacements.pop(ast.dump(node), None) if isinstance(node, ast.expr) else None
            return _name(name) if name is not None else self.generic_visit(node)
    return Replace().visit(iterator)


def _dotted_name(node):
    """"np.linalg.norm" for a chain of attributes of a name, "" for any other expression."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted_name(node.value)
        return base and f"{base}.{node.attr}"
    return ""


def _list_names(definition):
    """Names of `definition` that may hold a list: its parameters, and names it binds to a list
    or tuple display or comprehension, or appends to."""
    return _parameters(definition) | list_bindings(_walk_scope(definition.body))


def list_bindings(nodes):
    """The names `nodes` bind to a list or tuple display or comprehension (`[x] * n` too), or
    append to."""
    names = set()
    for node in nodes:
        value = getattr(node, "value", None)
        if isinstance(value, ast.BinOp):  # [x] * n
            value = value.left if isinstance(value.left, ast.List) else value.right
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(
                value, (ast.List, ast.Tuple, ast.ListComp)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in ("append", "extend", "insert")
              and isinstance(node.func.value, ast.Name)):
            names.add(node.func.value.id)
    return names
