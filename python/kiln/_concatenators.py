"""np.r_ and np.c_ of traced arrays (`np.c_[np.ones((n, 1)), X]` for a bias column,
`np.r_[0, tps / tps[-1]]` for a curve's points): NumPy's AxisConcatenator makes each item an
array by the array function of its module, which converts a tracer to an ndarray (a graph break
at each such line). While a trace runs, the numpy namespace holds these stand-ins (subclasses,
so isinstance holds): an index with a traced item is NumPy's recipe on the tracer (ndmin by
leading axes, trans1d's transpose, one result_type for all, np.concatenate); any other, and
string directives, go to NumPy's own."""
import numpy as np

from ._tracer import TracedArray

_ORIGINALS = {"r_": np.r_, "c_": np.c_}


def _at_least(obj, ndmin):
    """NumPy's array(obj, ndmin=ndmin): leading axes of length 1."""
    return np.reshape(obj, (1,) * (ndmin - np.ndim(obj)) + np.shape(obj)) if np.ndim(
        obj) < ndmin else obj


def _traced_getitem(self, items):
    objs, kinds = [], []  # kinds: dtypes, or scalars (weak Python ones too) for result_type
    for item in items:
        if isinstance(item, slice):
            obj = _ORIGINALS[self._name][item]  # NumPy's range, in the others' layout
            objs.append(obj)
            kinds.append(obj.dtype)
            continue
        if type(item) in np.ScalarType:
            objs.append(item)
            kinds.append(item)
            continue
        item_ndim = np.ndim(item)
        obj = _at_least(item if isinstance(item, TracedArray) else np.asarray(item), self.ndmin)
        if self.trans1d != -1 and item_ndim < self.ndmin:
            k2, k1 = self.ndmin - item_ndim, self.trans1d
            if k1 < 0:
                k1 += k2 + 1
            axes = list(range(self.ndmin))
            obj = np.transpose(obj, axes[:k1] + axes[k2:] + axes[k1:k2])
        objs.append(obj)
        scalar = isinstance(item, TracedArray) and item.ndim == 0 and item._weak is not None
        kinds.append(item._weak() if scalar else obj.dtype)
    final = np.result_type(*kinds)
    objs = [_at_least(np.asarray(obj, dtype=final) if not isinstance(obj, TracedArray)
                      else obj.astype(final, copy=False), self.ndmin) for obj in objs]
    return np.concatenate(tuple(objs), axis=self.axis)


def _stand_in(name):
    original = _ORIGINALS[name]

    class Concatenator(type(original)):
        __doc__ = type(original).__doc__
        _name = name

        def __getitem__(self, key):
            items = key if isinstance(key, tuple) else (key,)
            if not any(isinstance(item, TracedArray) for item in items) or any(
                    isinstance(item, str) for item in items):
                return super().__getitem__(key)
            return _traced_getitem(self, items)
    Concatenator.__name__ = Concatenator.__qualname__ = type(original).__name__
    return Concatenator()


ORIGINALS = dict(_ORIGINALS)
WRAPPERS = {name: _stand_in(name) for name in _ORIGINALS}
