"""Names a captured loop binds to views (`last = x[i]` in the body): the loop carries every name
by value, so where the function writes through such a name after the loop, or writes its array,
NumPy's view and the loop's copy part (kiln._loop_aliases.carried_views decides which names
may; checked_body gives the loop up where the traced body leaves a view in one of them)."""
from . import _helper_writes
from ._loop_types import CaptureFailed
from ._tracer import TracedArray
from ._unbound_locals import running_as_written


def _is_view(value):
    """Whether `value` is a traced view of another array (x[i], x.T, a slice; no number)."""
    return isinstance(value, TracedArray) and not value._scalar and value._root is not None


def checked_body(capture, body, get, names, views, frame, may_skip):
    """`body`, giving the loop up when its traced iteration binds an array to a name of
    `views` that the function may write through, or whose array it may write
    (kiln._loop_aliases.carried_views: (name, verdict of the body's bindings, verdict of
    every binding, bound every iteration, returned)): the loop carries every name by value, so
    after it (or in the next iteration) the name would be a copy where NumPy's is the
    view (`last = x[i]` in the body, then `last[0] = 9`, `bump(last)` or `x[-1] = 0`
    after it: the copy was written, or missed the write, no error). Such a loop runs as
    Python, its views NumPy's. The view the name held before the loop counts where it
    may survive it (may_skip: the loop may run no iteration; a body that binds it on a
    branch only); a number (`x[i]` of a vector) is no view, and a view the body updates
    in place (`u += ...`) follows its base (check_followers). (A branch's side binding a
    view gives its branch up, so a carried array that is no view after the body is a
    fresh one.)"""
    body = running_as_written(body)  # (Python's UnboundLocalError: kiln._unbound_locals)
    if not views:
        return body
    namespace = frame.f_globals
    # a helper's caller may write the view it returns (`r = last_row(x); r[0] = 9`); the
    # compiled function's results are copies
    helper = frame.f_code is not capture.compiled_code

    def checked(*index):
        before = get()
        body(*index)
        if capture.depth == 0:  # run as Python: its views are NumPy's
            return
        now = dict(zip(names, get()))
        for (name, in_body, anywhere, bound, returned), old in zip(
                views, (dict(zip(names, before)).get(name) for name, *_ in views)):
            value = now.get(name)
            if value is old:  # not rebound: a view made before the loop follows its base
                continue
            verdict = in_body if _is_view(value) else False
            if _is_view(old) and (may_skip or not bound):  # it may keep it
                verdict = anywhere
            if returned and helper and (_is_view(value) or _is_view(old)):
                verdict = True
            if verdict and _helper_writes.verdict(verdict, namespace):
                raise CaptureFailed(
                    f"`{name}` may be a view of an array, which the loop would carry as "
                    f"a copy, and the function writes through it or writes the array")
    return checked


class Unfollow(CaptureFailed):
    """A view made before a loop that its body rebinds (`path = np.append(path, ...)`):
    traced again, carried by value."""

    def __init__(self, name):
        super().__init__(name)
        self.name = name


def check_followers(followers, by_object, after):
    """Views that follow their carried root: still the same views of the same root after an
    iteration (NumPy's view of an array the body rebinds keeps the old array's memory)."""
    for name, view in followers.items():
        root_names = by_object[id(view._root)][1]
        if any(after[root] is not view._root for root in root_names):
            raise CaptureFailed(f"`{name}` is a view made before the loop, and the loop "
                                f"rebinds its base")
        if after[name] is not view:
            raise Unfollow(name)
