"""What a compiled call leaves behind when it raises: NumPy's state. NumPy runs a function line
by line, so an exception leaves the caller's arrays written up to the failing line and lets the
function's own `except` see NumPy's error; a compiled graph checks and writes at its end. Each
way a call can raise is answered here, as a part of CompiledFunction (kiln._compile):
- a runtime check's error (an index out of bounds) in a function with handlers or one that
  writes its arguments: the call runs again eagerly (`_reruns_on`; the C++ fast path the same,
  src/python/compiled_call.cpp, once `_note_writes_arguments` set it); so does any check's
  error in a function whose checks stand for errors Python raises elsewhere, or never
  (`_note_reruns_on_checks`: a name a loop that ran no iteration left unbound);
- an exception while tracing (the user's `raise`, shapes that do not broadcast): the writes the
  trace made before it run into the caller's arrays first (`_write_back_before_raising`);
- a traced value stored where the caller sees it before the raise: the trace is given up
  (LEAKED, kiln._compile).
"""
import dis
import types

from . import _aliasing, _kiln, _pytree
# CHECK_ERRORS: kiln._compile's
from ._retrace import (CHECK_ERRORS, EagerIsCheaper, RerunEagerly, TimeEagerly, _SegmentLimit,
                       _Traced)

Unsupported = _kiln.Unsupported
CompilerError = _kiln.CompilerError


LEAKED = "the function raised after storing a traced value where the caller sees it"
# NumPy's error for an __array__ that returned something else than an ndarray (a traced one).
NOT_AN_ARRAY = "__array__ method not producing an array"


def handles_exceptions(fn):
    """Whether `fn`'s code (or code nested in it) has exception handlers (try, with): a runtime
    check of its graph raises at the call, outside them. A handler the user wrote begins with
    PUSH_EXC_INFO; an exception table alone says nothing: from Python 3.12 on, every inlined
    comprehension ([v for v in x]) and generator expression has entries of its own, whose
    handlers only restore the stack and raise again."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return True  # a callable object: its handlers are not known
    pending = [code]
    while pending:
        code = pending.pop()
        if code.co_exceptiontable and any(instruction.opname == "PUSH_EXC_INFO"
                                          for instruction in dis.get_instructions(code)):
            return True
        pending.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return False


def written_inputs(tracer, inputs, outputs):
    """The (graph input, output) pairs of the inputs the trace wrote (their tensor rebound), each
    value appended to `outputs`: what is written back into the caller's arrays."""
    mutations = []
    for position, (tensor, tracer_object) in enumerate(inputs):
        current = tracer.unwrap(tracer_object)
        if current is not None and current.id != tensor.id:
            mutations.append((position, len(outputs)))
            outputs.append(current)
    return mutations


def donated(mutations, count):
    """By graph output (`count`): the input whose memory kiln may write it into, the argument
    it is the new value of (written_inputs' pairs), or -1."""
    inputs = [-1] * count
    for position, output in mutations:
        inputs[output] = position
    return inputs


class RaisingCalls:
    """CompiledFunction's answers to a call that raises (its fn, wrappers, writes_arguments,
    _outputs and _compile_segment)."""

    def _note_writes_arguments(self):
        """An entry writes the caller's arrays, or assigns attributes of self or of a global
        object: a runtime check's error (raised before any write-back) reruns the call eagerly,
        where NumPy makes the writes before the failing op raises (`x += 1; x[i]` with i out of
        bounds left x as it was, `self.calls += 1; x[i]` self.calls)."""
        if not self.writes_arguments:
            self.writes_arguments = True
            for wrapper in self.wrappers:
                wrapper.eager_on_check_error = True

    def _note_reruns_on_checks(self):
        """An entry's graph has a check that stands for an error Python raises elsewhere, or
        never (kiln._loop_first_bindings: a name that a loop running no iteration leaves
        unbound is read after it, or not, as NumPy's run goes on): a check's error reruns the
        call eagerly, which raises Python's error where it does."""
        if not self.reruns_on_checks:
            self.reruns_on_checks = True
            for wrapper in self.wrappers:
                wrapper.eager_on_check_error = True

    def _leaked(self, spec, traced_leaves, traced_tree, original, tracer):
        """Whether the caller's objects hold traced values (`o.val = x.sum()` before the
        function raised): NumPy's call, run eagerly after the caller's state is put back (the
        trace is given up), raises with them holding values. Not under fullgraph, where the
        user's exception goes on as it is."""
        return not self.fullgraph and _pytree.changed_copies(
            spec, traced_leaves, traced_tree, original,
            lambda value: tracer.unwrap(value) is not None)

    def _reruns_on(self, error, traced):
        """Whether the call that raised `error` running `traced` runs again eagerly: a runtime
        check's error, raised before any result or write-back, in a function with handlers
        (its `except` sees NumPy's error) or one that writes its arguments (NumPy writes them
        before the failing op), as the fast path does (src/python/compiled_call.cpp)."""
        return not isinstance(error, (CompilerError, Unsupported)) and bool(
            traced.mutations or self.writes_arguments or self.reruns_on_checks
            or handles_exceptions(self.fn))

    def reruns_on_a_segments_check(self):
        """Whether a runtime check's error in a segment run at a graph break, mid-trace, reruns
        the call eagerly, as _reruns_on does at the call's end: the op that raised may sit in
        the user's `try` while the break is after it (`try: dx = solve(J, F)` `except
        LinAlgError: dx = lstsq(...)`, then `if norm(dx) < tol`), where the error escaped."""
        return bool(self.reruns_on_checks or self.writes_arguments
                    or handles_exceptions(self.fn))

    def _gives_up_raising(self, leaked, context, tracer, inputs):
        """Before an exception of the trace goes on: whether the trace is given up (`leaked()`:
        the call then runs eagerly), else the writes it made before the exception run."""
        if leaked():
            return True
        self._write_back_before_raising(context, tracer, inputs)
        return False

    def _write_back_before_raising(self, context, tracer, inputs):
        """The function raised part-way through its trace: eager NumPy had written the caller's
        arrays the trace updated before the exception, so the graph of those writes runs (into
        the caller's arrays), then the exception goes on. Without it the arrays were left as
        they were before the call (`x += 1; x[10]` raised with x unchanged). An earlier
        runtime check that fails raises its error instead, as NumPy's would come first (one
        that stands for no NumPy error reruns the call eagerly: RerunEagerly)."""
        outputs = []
        mutations = written_inputs(tracer, inputs, outputs)
        if not mutations or any(_aliasing.overlaps_itself(context.real_arrays[position])
                                for position, _ in mutations):
            return
        _, output_spec = self._outputs(context, tracer, None)
        try:
            if context.broke:
                compiled, _, reads = self._compile_segment(context, outputs)
            else:
                compiled, reads = _kiln.compile_graph(context.trace, outputs, context.strides,
                                                      context.options), None
        except (TimeEagerly, EagerIsCheaper):
            raise  # the call runs eagerly (kiln._retrace.RetraceTimes): NumPy's writes, its error
        except (Unsupported, CompilerError, _SegmentLimit):
            return  # kiln's own limits: the exception goes on without the writes
        try:
            _Traced(compiled, context.real_arrays, output_spec, mutations, context.broke,
                    reads).run()
        except CHECK_ERRORS:
            # a check that stands for no NumPy error (the trace assumed what this call's run
            # does not): the call runs again eagerly, which raises NumPy's error, not the check's
            if self.reruns_on_checks:
                raise RerunEagerly() from None
            raise
