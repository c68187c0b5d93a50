"""The source of a function's code, checked to be that code before kiln._loop_transform rewrites
it: inspect finds a function's source by its file and first line, as the file is now."""
import __future__
import ast
import copy
import dis
import functools
import inspect
import operator
import types


def source_of(code, module_globals):
    """inspect.getsource(code), read as inspect reads it, without its search for the module: a
    code object has no __module__, so inspect.getmodule took the real path of every loaded
    module's file (0.05 s of a process's first kiln.compile, more with torch imported). A
    function of the code in its module's globals names its module; made here, it has no
    __wrapped__ for inspect to follow to another function's source (a decorator's)."""
    cells = tuple(types.CellType() for _ in code.co_freevars)
    return inspect.getsource(types.FunctionType(code, module_globals, closure=cells))


def compiles_to(definition, filename, code):
    """Whether the source found for `code` compiles to `code` itself. What inspect finds is the
    file as it is now (edited since the function was defined, or a function of the same name
    that functools.wraps made the wrapper's __wrapped__), and, compiled outside its class, a
    method's private names (self.__scale) are not mangled: a rewrite of it would run code the
    caller did not call. Such a function is traced as it is, its loops unrolled."""
    checked = copy.deepcopy(definition)
    checked.name = "__kiln_checked"  # its own name, bound in the factory, would be a cell there
    docstring = checked.body[0].value if _is_docstring(checked.body[0]) else None
    if docstring is not None and isinstance(code.co_consts[0], str) and (
            inspect.cleandoc(code.co_consts[0]) == inspect.cleandoc(docstring.value)):
        docstring.value = code.co_consts[0]  # a method's, dedented with its source
    factory = ast.FunctionDef(
        name="__kiln_factory",
        args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=name) for name in code.co_freevars],
                           kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=[checked], decorator_list=[], returns=None, type_comment=None)
    module = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(module)
    compiled = constant_code(compile_like(module, filename, code), "__kiln_factory")
    # Its classes' __qualname__ constants name the factory: read as the code's own.
    qualname = (f"__kiln_factory.<locals>.{checked.name}",
                getattr(code, "co_qualname", code.co_name))
    return _same_code(constant_code(compiled, checked.name), code, qualname)


def _is_docstring(statement):
    return (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, str))


def _same_code(made, code, qualname):
    """The same instructions on the same names and constants. Lines, columns and jump offsets
    aside (the source was dedented and compiled nested: EXTENDED_ARG of longer jumps), and a
    call's two forms: 3.11 calls a function or method read from a name its module imports
    (np.empty(...)) by LOAD_ATTR and PUSH_NULL, else LOAD_METHOD, and the factory's module has
    no imports."""
    fields = ("co_names", "co_varnames", "co_freevars", "co_cellvars", "co_argcount",
              "co_posonlyargcount", "co_kwonlyargcount")
    if any(getattr(made, field) != getattr(code, field) for field in fields):
        return False
    if made.co_flags & ~inspect.CO_NESTED != code.co_flags & ~inspect.CO_NESTED:
        return False  # (the __future__ flags are the code's: compile_like)
    if len(made.co_consts) != len(code.co_consts):
        return False
    named = [value.replace(*qualname) if isinstance(value, str) else value
             for value in made.co_consts]
    if _instructions(made) != _instructions(code):
        return False
    for mine, theirs in zip(named, code.co_consts):
        if isinstance(mine, types.CodeType) and isinstance(theirs, types.CodeType):
            if not _same_code(mine, theirs, qualname):
                return False
        elif type(mine) is not type(theirs) or repr(mine) != repr(theirs):  # -0.0, nan
            return False
    return True


def _instructions(code):
    """(operation, argument) of each instruction; a constant by its index (compared after)."""
    return [("LOAD_ATTR" if instruction.opname == "LOAD_METHOD" else instruction.opname,
             None if instruction.opcode in _JUMPS else instruction.arg
             if instruction.opcode in dis.hasconst else instruction.argval)
            for instruction in dis.get_instructions(code)
            if instruction.opname not in ("PUSH_NULL", "EXTENDED_ARG")]


_JUMPS = frozenset(dis.hasjrel) | frozenset(dis.hasjabs)


# The compiler flags of `from __future__ import ...` (annotations: its annotations are strings);
# nested_scopes' is CO_NESTED, which every nested function has.
_FUTURE_FLAGS = functools.reduce(operator.or_, (getattr(__future__, name).compiler_flag
                                               for name in __future__.all_feature_names), 0)
_FUTURE_FLAGS &= ~inspect.CO_NESTED


def compile_like(module, filename, code):
    """`module` compiled under the __future__ imports of the module `code` came from."""
    return compile(module, filename, "exec", flags=code.co_flags & _FUTURE_FLAGS,
                   dont_inherit=True)


def constant_code(code, name):
    return next(c for c in code.co_consts if isinstance(c, types.CodeType) and c.co_name == name)
