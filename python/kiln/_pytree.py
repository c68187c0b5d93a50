"""Pytrees: exact tuples, lists and dicts (insertion order) are containers, everything else is a
leaf. The C++ guard (src/python/guarded_cache.cpp) walks arguments in exactly this order, so
array leaf i here is graph input i there. Subclasses (namedtuples, OrderedDict) are leaves."""

_TUPLE, _LIST, _DICT, _LEAF = 0, 1, 2, 3


def flatten(tree):
    """(leaves, spec): spec rebuilds the tree with unflatten."""
    leaves = []
    return leaves, _flatten(tree, leaves)


def _flatten(node, leaves):
    kind = type(node)
    if kind is tuple:
        return (_TUPLE, [_flatten(child, leaves) for child in node])
    if kind is list:
        return (_LIST, [_flatten(child, leaves) for child in node])
    if kind is dict:
        return (_DICT, list(node.keys()), [_flatten(child, leaves) for child in node.values()])
    leaves.append(node)
    return (_LEAF,)


def unflatten(spec, leaves):
    """The tree of `spec` with `leaves` in flatten order."""
    iterator = iter(leaves)
    return _unflatten(spec, iterator)


def _unflatten(spec, iterator):
    kind = spec[0]
    if kind == _LEAF:
        return next(iterator)
    if kind == _TUPLE:
        return tuple(_unflatten(child, iterator) for child in spec[1])
    if kind == _LIST:
        return [_unflatten(child, iterator) for child in spec[1]]
    return {key: _unflatten(child, iterator) for key, child in zip(spec[1], spec[2])}


def map_leaves(function, tree):
    leaves, spec = flatten(tree)
    return unflatten(spec, [function(leaf) for leaf in leaves])
