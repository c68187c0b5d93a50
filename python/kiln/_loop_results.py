"""What a captured loop's traced iteration leaves, and the variables after its loop node
(kiln._loop_capture's LoopCapture, of which LoopResults is a mixin): the tensor each carried
slot holds after one iteration, the slots whose type changed (traced again), and the values,
NumPy-scalar flags and loop target set back into the function's names after the loop.
"""
import numpy as np

from . import _conditional_appends, _loop_appends, _loop_extents, _windows
from ._branch_capture import _restore, _Retype
from ._assumed_numbers import is_open, uncommitted_tensor
from ._loop_appends import Appended, Stack, Stacked
from ._loop_first_bindings import BoundInBody
from ._loop_optional_values import is_payload, is_present_flag
from ._loop_peeling import PeelFirst
from ._loop_scalar_kinds import kind_of
from ._loop_shared_arrays import SharedArrayRebound
from ._loop_types import (CaptureFailed, WindowMismatch, is_number as _is_number,
                          is_python_number as _is_python_number, python_type as _python_type,
                          type_of as _type_of, widened as _widened)
from ._tracer import TracedArray, backend, cast, to_tensor


class LoopResults:
    def _results(self, after, variables, slots, live, types, windows, by_value, side=False,
                 peel=None, kinds=None):
        """The tensor each slot holds after one iteration (new slots for temporaries that are
        read after the loop); raises _Retype for a slot whose type changed. A name first bound
        in a loop's body starts bound where the body is traced again (kiln._loop_first_bindings;
        not a branch's side: the other side may leave it unbound). peel: _trace_once's (a
        number first bound whose type an inner loop's running decides: PeelFirst). kinds: the
        numbers carried with their kinds (kiln._loop_scalar_kinds' KindCarry)."""
        results, retype, first_bound = [], {}, {}
        carried = {name for slot in slots for name in slot[0]}
        resizing = {name for slot in slots if slot[3].id in windows for name in slot[0]}
        for name, value in after.items():
            if (isinstance(value, TracedArray) and isinstance(value._selection, _windows.Window)
                    and (name in live or name in carried) and name not in resizing):
                # carried, it may be an array that shrinks (x = x[:i + 1] * d): probed
                failure = WindowMismatch if name in carried else CaptureFailed
                raise failure(f"`{name}`, a slice with a loop-varying bound, outlives its "
                              f"iteration")
            if (isinstance(value, TracedArray) and value._masked()
                    and (name in live or name in carried)):  # carried, it was all of x
                raise CaptureFailed(f"`{name}`, an x[mask] selection (of a data-dependent "
                                    f"shape), outlives its iteration")
        for array_names, array, initial, placeholder in list(slots):
            values = [after[name] for name in array_names]
            new = values[0]
            if isinstance(new, Stack) and new.count is not None:  # under a condition
                counted = placeholder.id == new.count_placeholder.id
                results.append(new.count.tensor if counted else new.buffer.tensor)
                continue
            if isinstance(new, Stack):
                if not new.written:
                    raise CaptureFailed(f"`{array_names[0]}` is not appended to in an iteration")
                results.append(new.buffer.tensor)
                continue
            if any(value is not new for value in values):
                message = (f"`{array_names[0]}` and `{array_names[1]}` share an array the loop "
                           f"rebinds")
                if array is None:
                    raise CaptureFailed(message)
                raise SharedArrayRebound(message, [name for name, value in zip(array_names, values)
                                                   if value is not array])
            if kinds is not None and array_names[0] in kinds.names:
                results.append(kinds.value(array_names[0], new))
                continue
            kind = kind_of(self.context, new, variables.get(array_names[0]), side)
            if kind is not None:  # a NumPy scalar a branch makes a Python number
                retype[array_names[0]] = kind
                continue
            if array is not None and new is not array and array._tensor.id != placeholder.id:
                raise CaptureFailed(f"the loop both updates `{array_names[0]}` in place and "
                                    f"rebinds it")
            if not isinstance(new, TracedArray) and not _is_number(new):
                raise CaptureFailed(f"`{array_names[0]}` holds an array before the loop and a "
                                    f"{type(new).__name__} after an iteration")
            if placeholder.id in by_value:
                _loop_extents.check_rebound(by_value[placeholder.id], new, placeholder,
                                            array_names[0])
            if placeholder.id in windows:
                kind, window = windows[placeholder.id]
                results.append(_loop_extents.carried(self.context, new, window, kind,
                                                     tuple(placeholder.shape), array_names[0]))
                continue
            tensor = new.tensor if isinstance(new, TracedArray) else to_tensor(self.context, new)
            if _type_of(tensor) != _type_of(placeholder):
                kind = (_loop_extents.resizing(placeholder, new) or
                        _widened(placeholder, tensor, array_names[0]))
                if isinstance(types.get(array_names[0]), BoundInBody):
                    kind = BoundInBody.of(self.context, new, kind, array_names[0])
                retype[array_names[0]] = kind
            results.append(tensor)
        for name, value in after.items():
            old = variables.get(name, self.UNBOUND)
            if any(name in slot[0] for slot in slots):
                continue
            if isinstance(value, Appended) and value.items is old and value.depth == self.depth:
                retype[name] = Stacked(value)  # traced again, carrying the rows
                continue
            if value is old or (_is_number(value) and _is_number(old) and type(value) is
                                type(old) and value == old):
                continue
            if old is self.UNBOUND and name not in live and not is_payload(name):
                # a temporary of the body (an inner loop's target), not read after (an
                # optional value's payload may be read by the next iteration, where its flag is
                # set: `if prev is not None: ... prev = row`)
                continue
            if old is self.UNBOUND and peel and is_open(value) and value._by_run:
                # NumPy's where an inner loop ran an iteration (`s = 0.0; for k in range(i):
                # s += ...`, then `return y, s`): carried, that was a check failing at i = 0,
                # every call rerun eagerly; the first iteration runs on its own, and the loop
                # of the others sees the number bound (kiln._loop_number_types)
                raise PeelFirst()
            if old is self.UNBOUND and (isinstance(value, TracedArray) or _is_number(value)):
                # first bound in the body: carried from zeros (a Python or NumPy number too,
                # `mid = 0.5 * (lo + hi)` of a first trace whose lo and hi were still numbers)
                kind = BoundInBody.of(self.context, value)
                if not side:
                    first_bound[name] = kind
                initial, placeholder, _ = kind.carried(self.context)
                slots.append(([name], None, initial, placeholder))
                results.append(to_tensor(self.context, value))
                continue
            kind = kind_of(self.context, value, old, side)
            if kind is not None:  # a Python number a branch makes NumPy's
                retype[name] = kind
                continue
            if isinstance(value, TracedArray) and _is_number(old):
                retype[name] = _type_of(value.tensor)
                continue
            if _is_number(value) and _python_type(value) is None and _is_number(old):
                # a NumPy scalar the body computes from numbers only (an LCG's `s = s * a + c`
                # on np.uint32): carried as a traced one, as a traced value would be, not unrolled
                retype[name] = (np.asarray(value).dtype.name, ())
                continue
            if _is_python_number(value) and _is_python_number(old):  # a counter: carried
                retype[name] = (np.result_type(np.asarray(old), np.asarray(value)).name, ())
                continue
            if is_present_flag(name) and type(value) is bool and type(old) is bool:
                # an optional value's flag that the first iteration sets: carried, traced
                # (kiln._loop_optional_values)
                retype[name] = ("bool", ())
                continue
            raise CaptureFailed(f"the loop changes the Python value of `{name}`")
        if retype:
            raise _Retype({**first_bound, **retype})
        return results

    def _last_index(self, start, stop, step, before):
        """The loop target after a loop of a dynamic count, as a traced Python int: its last
        value, or its value from before when the loop ran no iteration."""
        k = backend()

        def integer(value):
            return self.context.constant(value, np.dtype(np.int64))
        span = k.subtract(stop, start) if step > 0 else k.subtract(start, stop)
        count = k.floor_divide(k.add(span, integer(abs(step) - 1)), integer(abs(step)))
        last = k.add(start, k.multiply(k.subtract(count, integer(1)), integer(step)))
        if _is_number(before) or isinstance(before, TracedArray) and before.ndim == 0:
            last = k.where(k.greater(count, integer(0)), last,
                           cast(to_tensor(self.context, before), "int64"))
        result = TracedArray(self.context, last)
        result._scalar, result._weak = True, int
        return result

    def _apply(self, slots, values, names, after, set_, span, saved, has_target, variables,
               last=None, windows=None):
        """The variables after the loop: arrays updated in place keep their identity; arrays
        the body only rebinds keep their value from before the loop; temporaries of the body
        that are not carried (nothing reads them after the loop) are unbound again."""
        flags = self._final_flags(slots, names, after, span, saved, variables)
        _restore(saved)
        final = {}
        counts = _conditional_appends.read_counts(self.context, values, [  # (one break)
            position for position, (array_names, _, _, placeholder) in enumerate(slots)
            if _counted(after[names.index(array_names[0])], placeholder)])
        for position, ((array_names, array, _, placeholder), tensor, flag) in enumerate(
                zip(slots, values, flags)):
            new = after[names.index(array_names[0])]
            if windows and placeholder.id in windows:  # the window's positions at the end
                tensor = _loop_extents.final(tensor, windows[placeholder.id][0], len(span))
            if isinstance(new, Stack) and new.count is not None:
                if placeholder.id == new.count_placeholder.id:
                    continue  # read with the rows', the slot before it
                # the list, with the first `count` rows (the count's slot follows the rows')
                new.items.extend(_loop_appends.rows(self.context, new, tensor,
                                                    counts[position + 1]))
                final[array_names[0]] = new.items
                continue
            if isinstance(new, Stack):  # the list, with the rows the loop appended
                new.items.extend(_loop_appends.rows(self.context, new, tensor))
                final[array_names[0]] = new.items
                continue
            if array is not None and new is array:
                array._tensor, array._version = tensor, array._version + 1
                continue
            result = TracedArray(self.context, tensor)
            # A Python or NumPy scalar stays one after the loop (a counter `n += 1` a weak
            # Python int: x8 + n is int8), as the body's last iteration leaves it
            result._scalar, result._weak = flag
            for name in array_names:
                final[name] = result
        def value(name):
            if name in final:
                return final[name]
            if has_target and name == names[-1]:
                if span is None:
                    return last
                return span[-1] if len(span) > 0 else self.KEEP
            return self.UNBOUND if variables.get(name, self.UNBOUND) is self.UNBOUND else self.KEEP
        set_(tuple(value(name) for name in names))

    def _final_flags(self, slots, names, after, span, saved, variables):
        """(NumPy scalar?, weak type) of each slot's value after the loop. The body ran on
        placeholders that are arrays: a slot it sets to another slot's value unchanged
        (`a, b = b, a + b` on 0-d arrays) has that slot's flags of one iteration before,
        followed through the iterations where their count is known at the trace."""
        holders = {id(array): i for i, (_, array, _, _) in enumerate(slots) if array is not None}
        # a number's slot is held by a new array on its placeholder
        numbers = {placeholder.id: i for i, (_, array, _, placeholder) in enumerate(slots)
                   if array is None}
        rules, state = [], []
        for array_names, array, _, _ in slots:
            new = after[names.index(array_names[0])]
            if isinstance(new, TracedArray):
                source = holders.get(id(new))
                if source is None and new._root is None and new._selection is None:
                    source = numbers.get(uncommitted_tensor(new).id)
                rules.append((new._scalar, new._weak) if source is None else source)
            else:
                rules.append((_is_number(new), _python_type(new)))
            if array is not None:
                state.append((saved[id(array)][2], array._weak))
            else:
                old = variables.get(array_names[0])
                state.append((_is_number(old), _python_type(old)))
        copies = [i for i, rule in enumerate(rules) if isinstance(rule, int)]
        if not copies:
            return rules
        # A count unknown at the trace: the flags after one iteration.
        for _ in range(1 if span is None else len(span)):
            new_state = [state[rule] if isinstance(rule, int) else rule for rule in rules]
            if new_state == state:
                break
            state = new_state
        return state


def _counted(new, placeholder):
    """Whether the slot of `placeholder` is the count of a list appended to under a condition."""
    return (isinstance(new, Stack) and new.count is not None
            and placeholder.id == new.count_placeholder.id)
