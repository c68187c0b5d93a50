"""torch's dynamic sizes as kiln size symbols: each SymInt's sympy expression over the graph's
input symbols (s0, s1, ...) becomes the same polynomial over kiln size symbols of one trace, so
that one kiln graph stands for every size (ir/shape.h). A max or min of polynomials (a sliding
window's first position, Max(0, s0 - 4096)) becomes the argument that is its value at the
traced sizes, on a condition that each call's sizes keep it so (`conditions`, checked per call:
_size_checks.py). A division that divides exactly as polynomials (XLNet's
`s0 * s1 // s0` of a reshape, an arange's length ceil(-2*s0 / -1.0)) is its quotient. Anything else (other floor divisions, a
data-dependent size) is refused, and the
graph compiles per size instead (_dynamic_sizes.py), or per value of the symbols an op needs as
numbers (`fixed`: a CNN's image size, its batch kept symbolic).
"""
import sympy
import torch
from torch.utils._sympy.functions import (CeilToInt, FloatTrueDiv, FloorDiv, FloorToInt,
                                         Max as TorchMax, Min as TorchMin, ToFloat)

from .. import _kiln
from ._aten_table import Unconvertible


def same_size(a, b):
    """Whether two sizes (ints or SymInts) are one expression (no guard is made)."""
    a, b = (size.node.expr if isinstance(size, torch.SymInt) else size for size in (a, b))
    return a == b


def traced_values(shape_env):
    """sympy symbol -> the number Dynamo traced it at."""
    return (shape_env.backed_var_to_val if hasattr(shape_env, "backed_var_to_val")
            else shape_env.var_to_val)


class SizeSymbols:
    def __init__(self, trace, fixed=None):
        self.trace = trace
        self.fixed = fixed or {}  # sympy symbol -> the number it stands for here
        self.symbols = {}  # sympy symbol -> kiln.Size
        self.aliases = {}  # sympy symbol -> the symbol it equals (assume_equal)
        self.offsets = {}  # sympy symbol -> the kiln symbol of its shifted size (bind_input_sizes)
        self.whole = {}  # sympy expression -> its own kiln symbol (bind_input_sizes)
        self.conditions = []  # sympy expressions a call's sizes must keep >= 0 (_branch)

    def size(self, extent):
        """An int or SymInt as an int or a kiln.Size."""
        if isinstance(extent, int):
            return extent
        if not isinstance(extent, torch.SymInt):
            raise Unconvertible(f"the size {extent!r} is not an integer")
        expr = extent.node.expr
        if self.fixed and expr.free_symbols & self.fixed.keys():
            expr = expr.subs(self.fixed)  # a floor division of fixed sizes is a number now
        return self._convert(expr, extent.node.shape_env)

    def assume_equal(self, first, second):
        """Two sizes an op needs equal where torch recorded no guard (s0 + 1 and s1 + 1: s1
        becomes s0) are one kiln symbol; a call whose tensors disagree is then refused by
        kiln's size binding (ir::bind_sizes)."""
        if not (isinstance(first, torch.SymInt) and isinstance(second, torch.SymInt)):
            return
        difference = first.node.expr - second.node.expr
        symbols = sorted(difference.free_symbols, key=str)
        if len(symbols) != 2 or difference not in (symbols[0] - symbols[1],
                                                   symbols[1] - symbols[0]):
            return
        kept, replaced = (self._root(symbol) for symbol in symbols)
        if kept != replaced and replaced not in self.symbols:
            self.aliases[replaced] = kept

    def _root(self, symbol):
        while symbol in self.aliases:
            symbol = self.aliases[symbol]
        return symbol

    def bind_input_sizes(self, extents):
        """Input dimensions that are no symbol by itself, as a part of a graph around an op
        kiln lacks receives them: a symbol the inputs hold only shifted (s1 - 2: a convolution's
        output side, a slice) takes its value from that dimension (a kiln symbol k for it, and
        s1 = k + 2); a dimension whose symbols no input holds otherwise (2*s0*s1: tokens times
        experts, flattened) is a kiln symbol of its own, which serves where the graph reads that
        whole product (an op that needs s0 apart is refused: check_bound). Such a kiln symbol
        stands for sizes >= 2 (ir/shape.h) where the dimension may be smaller: the caller
        checks (CompiledGraph)."""
        extents = [extent for extent in extents if isinstance(extent, torch.SymInt)
                   and extent.node.expr.free_symbols]
        bare = {extent.node.expr for extent in extents if extent.node.expr.is_Symbol}
        for extent in extents:
            expr = extent.node.expr
            if expr.is_Symbol or not expr.is_Add or len(expr.args) != 2:
                continue
            constant, symbol = sorted(expr.args, key=lambda arg: not arg.is_Integer)
            if not (constant.is_Integer and symbol.is_Symbol):
                continue
            symbol = self._root(symbol)
            hint = traced_values(extent.node.shape_env).get(symbol)
            if (symbol in bare or symbol in self.symbols or symbol in self.fixed or hint is None
                    or int(hint) + int(constant) < 2):
                continue
            self.offsets[symbol] = self.trace.size_symbol(int(hint) + int(constant))
            self.symbols[symbol] = self.offsets[symbol] - int(constant)
        for extent in extents:
            expr = extent.node.expr
            if expr in self.whole or expr.free_symbols <= bare | self.offsets.keys() | self.fixed.keys():
                continue
            hint = expr.subs(traced_values(extent.node.shape_env))
            if hint.is_Integer and int(hint) >= 2:
                self.whole[expr] = self.trace.size_symbol(int(hint))

    def check_bound(self, inputs):
        """Each symbol must be a dimension of some tensor input, by itself or shifted
        (bind_input_sizes): a call's tensors give the symbols their values (ir::bind_sizes). One
        that only a size argument carries (a backward graph's saved batch size) is refused: the
        graph compiles per size."""
        bare = {repr(extent) for value in inputs if hasattr(value, "shape")
                for extent in value.shape if isinstance(extent, _kiln.Size)}
        for expr, symbol in self.symbols.items():
            if repr(self.offsets.get(expr, symbol)) not in bare:
                raise Unconvertible(f"the size {expr} is no tensor input's dimension")

    def _convert(self, expr, shape_env):
        if expr.is_Integer:
            return int(expr)
        if expr in self.whole:
            return self.whole[expr]
        if expr.is_Symbol:
            expr = self._root(expr)
            found = self.symbols.get(expr)
            if found is None:
                hint = traced_values(shape_env).get(expr)
                if hint is None or int(hint) < 2:
                    raise Unconvertible(f"the size {expr} has no value to expect (data-dependent)")
                found = self.symbols[expr] = self.trace.size_symbol(int(hint))
            return found
        if expr.is_Add or expr.is_Mul:
            parts = [self._convert(arg, shape_env) for arg in expr.args]
            result = parts[0]
            for part in parts[1:]:
                result = result + part if expr.is_Add else result * part
            return result
        if isinstance(expr, (TorchMax, TorchMin, sympy.Max, sympy.Min)):
            return self._convert(self._branch(expr, shape_env), shape_env)
        if expr.is_Pow and expr.exp.is_Integer and int(expr.exp) > 0:
            base = self._convert(expr.base, shape_env)
            result = base
            for _ in range(int(expr.exp) - 1):
                result = result * base
            return result
        simpler = _exact_divisions(expr)
        if simpler != expr:
            return self._convert(simpler, shape_env)
        raise Unconvertible(f"the size {expr} is not a polynomial in the input sizes")

    def _branch(self, expr, shape_env):
        """The argument of a max or min that is its value at the traced sizes (the first of
        equal ones), with the conditions that keep it so: chosen - other >= 0 for a max,
        other - chosen >= 0 for a min."""
        if not all(argument.is_polynomial() for argument in expr.args):
            # (its conditions are evaluated per call as polynomials: _size_checks.py)
            raise Unconvertible(f"the size {expr} is not a max or min of polynomials")
        values = {**traced_values(shape_env), **self.fixed}
        at_trace = [argument.subs(values) for argument in expr.args]
        if not all(value.is_number for value in at_trace):
            raise Unconvertible(f"the size {expr} has no value to expect (data-dependent)")
        largest = isinstance(expr, (TorchMax, sympy.Max))
        chosen = at_trace.index(max(at_trace) if largest else min(at_trace))
        for index, argument in enumerate(expr.args):
            if index != chosen:
                self.conditions.append(expr.args[chosen] - argument if largest
                                       else argument - expr.args[chosen])
        return expr.args[chosen]


def _exact_divisions(expr):
    """expr with each integer division inside it that divides exactly replaced by its quotient
    (innermost first: XLNet's ((2*s0 - 1) * (s0**2 // s0)) // s0)."""
    if not expr.args:
        return expr
    expr = expr.func(*(_exact_divisions(arg) for arg in expr.args))
    division = _integer_division(expr)
    if division is not None:
        quotient = _exact_quotient(*division)
        return expr if quotient is None else quotient
    return expr


def _integer_division(expr):
    """(numerator, divisor) of p // q, or of ceil or floor of float(p) / c for an integral
    float c (an arange's length: ceil((end - start) / step)); else None."""
    if isinstance(expr, FloorDiv):
        return expr.args
    if isinstance(expr, (CeilToInt, FloorToInt)) and isinstance(expr.args[0], FloatTrueDiv):
        numerator, divisor = expr.args[0].args
        if (isinstance(numerator, ToFloat) and divisor.is_number and divisor != 0
                and float(divisor).is_integer()):
            return numerator.args[0], sympy.Integer(int(divisor))
    return None


def _exact_quotient(numerator, divisor):
    """numerator // divisor as a polynomial of integer coefficients where the division leaves
    no remainder for any sizes (s0**2 // s0 = s0, (2*s0 + 4) // 2 = s0 + 2); else None."""
    if not (numerator.is_polynomial() and divisor.is_polynomial()) or divisor == 0:
        return None
    quotient = sympy.expand(sympy.cancel(numerator / divisor))
    if not quotient.is_polynomial() or sympy.expand(quotient * divisor - numerator) != 0:
        return None
    symbols = sorted(quotient.free_symbols, key=str)
    coefficients = sympy.Poly(quotient, *symbols).coeffs() if symbols else [quotient]
    return quotient if all(c.is_Integer for c in coefficients) else None
