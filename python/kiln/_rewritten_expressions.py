"""The expressions of the user's function that kiln's loop and branch rewriting
(kiln._loop_transform) turns into calls of the capture helper: `a and b`, `not a`,
`a if c else b`, min/max, complex(), NumPy scalar types and lists handed to NumPy anywhere in
the function; float(x), int(x), bool(x) and x.item() in a loop's test and body, and in its
return values. On concrete operands each helper gives Python's value; on traced ones it stays
in the graph instead of asking a traced value for bool() or a number (a graph break)."""
import ast
import copy

from ._loop_rewrite_parts import HELPER, _dotted_name, _helper_call, _walk_scope
from ._loop_short_circuit import choice, may_write, short_circuit
from ._math_calls import NAMES as MATH_NAMES


class _LogicRewriter(ast.NodeTransformer):
    """`a and b`, `a or b`, `not a` in a loop's or branch's test: Python asks bool() of each
    operand, which a traced value cannot answer. The helper's short_circuit keeps Python's
    short-circuit on concrete operands and, on traced ones, traces each later operand as a
    branch side (kiln._loop_short_circuit); not_ negates traced values elementwise."""

    in_test = True
    in_place = None  # what the function may write in place (_ChoiceRewriter's)

    def __init__(self, location):
        self.location = location

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        return short_circuit(node, self.location(node), self.in_test, self.in_place)

    def visit_Compare(self, node):
        """`lo <= c <= hi`: Python's `lo <= c and c <= hi` (the first false comparison, or the
        last), which asks bool() of the first; rewritten so where the operands in the middle
        are names, constants or their items, which reading twice cannot change (a rot13 loop's
        `if 97 <= c <= 122:` was a graph break per character)."""
        self.generic_visit(node)
        membership = self.membership(node)
        if membership is not None:
            return membership
        if len(node.ops) < 2 or not all(map(_reread_alike, node.comparators[:-1])):
            return node
        operands = [node.left] + node.comparators
        pairs = [ast.copy_location(ast.Compare(left=copy.deepcopy(operands[k]), ops=[op],
                                               comparators=[copy.deepcopy(operands[k + 1])]),
                                   node)
                 for k, op in enumerate(node.ops)]
        return self.visit_BoolOp(ast.copy_location(ast.BoolOp(op=ast.And(), values=pairs), node))

    def membership(self, node):
        """`c in (97, 101, 105)` in a test: `c == 97 or c == 101 or c == 105` (`not in`: `!=`
        joined by `and`), where the numbers are constants and c reads alike twice; None
        otherwise. Python's `in` is a bool of the first equal item, which a test reads alike
        (a vowel count's `if c in (...)` was a graph break per character)."""
        if not (self.in_test and len(node.ops) == 1
                and isinstance(node.ops[0], (ast.In, ast.NotIn)) and _reread_alike(node.left)):
            return None
        items = node.comparators[0]
        if not (isinstance(items, (ast.Tuple, ast.List, ast.Set)) and items.elts and all(
                isinstance(item, ast.Constant) and type(item.value) in (int, float, bool)
                for item in items.elts)):
            return None
        inside = isinstance(node.ops[0], ast.In)
        pairs = [ast.copy_location(ast.Compare(left=copy.deepcopy(node.left),
                                               ops=[ast.Eq() if inside else ast.NotEq()],
                                               comparators=[item]), node)
                 for item in items.elts]
        joined = ast.BoolOp(op=ast.Or() if inside else ast.And(), values=pairs)
        return self.visit_BoolOp(ast.copy_location(joined, node))

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if not isinstance(node.op, ast.Not):
            return node
        call = _helper_call("not_(None)", node)
        call.args = [node.operand]
        return ast.copy_location(call, node)


def _reread_alike(node):
    """A name, a constant, or an item of a name by names and constants (`x[i]`, `a[i, 0]`)."""
    if isinstance(node, (ast.Name, ast.Constant)):
        return True
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        index = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        return all(isinstance(item, (ast.Name, ast.Constant)) for item in index)
    return False


class _ChoiceRewriter(_LogicRewriter):
    """`a if c else b`, `a and b`, `a or b`, `not a` and `min(a, b)` / `max(a, b)` anywhere in
    the function: Python asks bool() of a traced value, a graph break that made a loop run as
    Python, one graph per iteration. The helper's choose / extremum keep Python's values on
    concrete operands and select (both sides computed, each side's checks where it is taken)
    on traced ones."""

    in_test = False

    def __init__(self, location, list_names=frozenset(), in_place=None):
        super().__init__(location)
        self.found = []
        self.list_names = list_names  # names that may hold lists (_list_names)
        self.in_place = in_place  # what the function may write in place (kiln._loop_aliases)

    def visit_IfExp(self, node):
        self.generic_visit(node)
        self.found.append(self.location(node))
        return choice(node, self.location(node), self.in_place)

    def visit_BoolOp(self, node):
        """`a and b` is b if a is true, else a (`or`: a if true, else b): Python's values."""
        self.found.append(self.location(node))
        return super().visit_BoolOp(node)

    def visit_Call(self, node):
        self.generic_visit(node)
        if not (isinstance(node.func, ast.Name) and node.func.id in ("min", "max")
                and len(node.args) >= 2 and not node.keywords
                and not any(isinstance(a, ast.Starred) for a in node.args)):
            return self.complex_call(node) or self.scalar_call(node) or self.list_call(node)
        self.found.append(self.location(node))
        call = _helper_call(f"extremum({self.location(node)!r})", node)
        call.args += [node.func] + node.args
        if may_write(self.in_place, node.args):  # max(a, b) is a or b itself, as a choice
            call.keywords = [ast.copy_location(ast.keyword(arg="written",
                                                           value=ast.Constant(True)), node)]
        return ast.copy_location(call, node)


    def complex_call(self, node):
        """`complex(re, im)`: the helper's complex_number(complex, re, im), the complex number
        traced where its parts are (Numba's mandel: c = complex(x, y)); None for other calls."""
        if not (isinstance(node.func, ast.Name) and node.func.id == "complex"
                and 1 <= len(node.args) <= 2 and not node.keywords
                and not any(isinstance(a, ast.Starred) for a in node.args)):
            return None
        self.found.append(self.location(node))
        call = _helper_call("complex_number(None)", node)
        call.args = [node.func] + node.args
        return ast.copy_location(call, node)

    def scalar_call(self, node):
        """`np.float32(x)`, `np.uint32(b)`: a NumPy scalar type called on a traced value was
        NumPy's conversion of it, a graph break (a hash loop: a graph per byte); the helper's
        scalar(type, x) casts it in the graph. None for other calls."""
        name = _dotted_name(node.func).rsplit(".", 1)[-1]
        if name not in _SCALAR_TYPES or len(node.args) != 1 or node.keywords or isinstance(
                node.args[0], ast.Starred):
            return None
        self.found.append(self.location(node))
        call = _helper_call("scalar(None, None)", node)
        call.args = [node.func, node.args[0]]
        return ast.copy_location(call, node)

    def list_call(self, node):
        """A call of a (dotted) name whose arguments may be lists of traced arrays handed to
        NumPy (`np.mean([a, b], axis=0)`, `np.maximum.reduce(masks)`): each such argument is
        the helper's listed(callee, argument) (kiln._numpy_sequences), the stack NumPy would
        make of it where the callee is NumPy's; before, NumPy converted the list, a graph break
        at each traced array in it. The call itself stays as written."""
        if not _dotted_name(node.func) or _dotted_name(node.func).split(".")[0] == HELPER:
            return node
        changed = False
        starred = [isinstance(a, ast.Starred) for a in node.args]
        for holder, field in [(node.args, i) for i in range(len(node.args))] + [
                (keyword, "value") for keyword in node.keywords]:
            value = holder[field] if isinstance(holder, list) else getattr(holder, field)
            if not (isinstance(value, (ast.List, ast.Tuple, ast.ListComp)) or
                    isinstance(value, ast.Name) and value.id in self.list_names):
                continue
            # its place: an output (out=) is never stacked; a position after *args is unknown
            slot = (holder.arg if not isinstance(holder, list) else
                    None if any(starred[:field + 1]) else field)
            call = _helper_call("listed(None, None, None)", value)
            call.args = [copy.deepcopy(node.func), value, ast.Constant(slot)]
            if isinstance(holder, list):
                holder[field] = call
            else:
                setattr(holder, field, call)
            changed = True
        if changed:
            self.found.append(self.location(node))
        return node


_SCALAR_TYPES = {"bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                 "uint64", "float16", "float32", "float64", "complex64", "complex128", "intp",
                 "uintp", "byte", "ubyte", "short", "ushort", "intc", "uintc", "int_", "uint",
                 "longlong", "ulonglong", "half", "single", "double", "csingle", "cdouble"}


class _ConversionRewriter(ast.NodeTransformer):
    """`float(x)`, `int(x)`, `bool(x)`, `x.item()` and `len(x)` in a loop's test and body: a
    traced x would be a graph break each iteration (`while float(err) > tol:`, Jacobi's idiom:
    a graph per iteration; `len(np.flatnonzero(row))`). The helper's to_python keeps them
    traced, as the Python number they stand for, where the loop is captured; elsewhere they
    are Python's."""

    def __init__(self, in_test):
        self.in_test = in_test

    def visit_Call(self, node):
        self.generic_visit(node)
        if _math_function(node):  # math.sqrt(x): the helper's math_call (kiln._math_calls)
            return _as_math_call(node)
        if not _conversion(node, lengths=True):
            return node
        call = _helper_call(f"to_python(None, None, {self.in_test})", node)
        call.args[:2] = _conversion_arguments(node)
        return ast.copy_location(call, node)


def _as_math_call(node):
    call = _helper_call("math_call(None)", node)
    call.args = [node.func] + node.args
    return ast.copy_location(call, node)


class _MathRewriter(ast.NodeTransformer):
    """Python's math functions anywhere in the function (`math.sqrt(x[0] ** 2 + x[1] ** 2)`
    after its loops): the helper's math_call, as in loop bodies, where a traced argument was a
    float() graph break. Functions the user defines inside are left alone: they may run after
    the trace (the rewrite's own, loop bodies and branch sides, are visited)."""

    def __init__(self, location):
        self.location, self.found = location, []

    def visit_FunctionDef(self, node):
        return self.generic_visit(node) if node.name.startswith("__kiln") else node

    def visit_Lambda(self, node):
        return node

    def visit_ClassDef(self, node):
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        if not _math_function(node):
            return node
        self.found.append(self.location(node))
        return _as_math_call(node)


def _traced_math_calls(statements, location):
    """The statements with their math calls traced (_MathRewriter), and those calls'
    locations."""
    rewriter = _MathRewriter(location)
    statements = [ast.fix_missing_locations(rewriter.visit(s)) for s in statements]
    return statements, rewriter.found


def _returned_conversions(statements, location):
    """`return float(loss)`, `return w, loss.item()`, `return {"loss": float(l)}`, `return
    int(n) if n else 0`: a conversion that is itself (an element of, a side of) the returned
    value stays traced, as the Python number it stands for, and the result is that number (a
    graph break ran the graph so far, then traced the function again on each call, its numbers
    static). Returns their locations."""
    found = []

    def converted(value):
        if isinstance(value, (ast.Tuple, ast.List)):
            value.elts = [converted(element) for element in value.elts]
        elif isinstance(value, ast.IfExp):  # `return int(d.max()) if n else 0`: either side
            value.body, value.orelse = converted(value.body), converted(value.orelse)
        elif isinstance(value, ast.Dict):
            value.values = [converted(element) for element in value.values]
        elif _conversion(value):
            found.append(location(value))
            call = _helper_call("returned(None, None)", value)
            call.args = _conversion_arguments(value)
            return ast.copy_location(call, value)
        return value

    for node in _walk_scope(statements):
        if isinstance(node, ast.Return) and node.value is not None:
            node.value = converted(node.value)
    return found


def _conversion_arguments(node):
    """The helper's (function, value) of a _conversion: (float, x), or (None, x) for x.item()."""
    return ([node.func, node.args[0]] if node.args else
            [ast.Constant(value=None), node.func.value])


def _math_function(node):
    """`math.sqrt(x)`, `sqrt(x)` and the other names of kiln._math_calls, positional: which
    function the name holds is known when it runs."""
    if not (isinstance(node, ast.Call) and not node.keywords
            and not any(isinstance(a, ast.Starred) for a in node.args)):
        return False
    function = node.func
    if isinstance(function, ast.Attribute) and isinstance(function.value, ast.Name):
        return function.value.id == "math" and function.attr in MATH_NAMES
    return isinstance(function, ast.Name) and function.id in MATH_NAMES


def _conversion(node, lengths=False):
    """float(x), int(x), bool(x) or x.item(); len(x) too with `lengths`."""
    if not isinstance(node, ast.Call):
        return False
    names = ("float", "int", "bool", "len") if lengths else ("float", "int", "bool")
    builtin = (isinstance(node.func, ast.Name) and node.func.id in names
               and len(node.args) == 1 and not node.keywords
               and not isinstance(node.args[0], ast.Starred))
    item = (isinstance(node.func, ast.Attribute) and node.func.attr == "item"
            and not node.args and not node.keywords)
    return builtin or item


def _with_traced_conversions(statements, in_test=False):
    rewriter = _ConversionRewriter(in_test)
    return [ast.fix_missing_locations(rewriter.visit(statement)) for statement in statements]


def _traceable_logic(test, location):
    return ast.fix_missing_locations(_LogicRewriter(location).visit(test))
