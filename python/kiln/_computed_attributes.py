"""Attributes of a user's module or class that code reads but no read of the namespace's
dict can find, because they are made at each read: a module-level __getattr__ (PEP 562: lazy
loading, `lazymod.W`), a metaclass's property, __getattr__ or attribute (`Cfg.k`). No guard
can read them and a trace would fix their values (arrays too) in the graph, so such a call
runs eagerly (kiln._environment: unwatched_read)."""
import types

from ._code_names import _attributes_of_name, _class_names
from ._user_code import _is_user_class


def computed_attribute_read(code, name, namespace):
    """Why `code`, reading attributes off `name` (which holds `namespace`), reads one made at
    each read; None when it reads none."""
    if isinstance(namespace, types.ModuleType):
        if "__getattr__" not in vars(namespace):
            return None
        computed = [attribute for attribute in _attributes_of_name(code, name)
                    if attribute not in vars(namespace)]
        maker = f"module {namespace.__name__}'s __getattr__"
    elif (isinstance(namespace, type) and type(namespace) is not type
          and _is_user_class(type(namespace))):
        own = set(_class_names(namespace))
        computed = [attribute for attribute in _attributes_of_name(code, name)
                    if attribute not in own
                    and not (attribute.startswith("__") and attribute.endswith("__"))]
        maker = f"the metaclass {type(namespace).__name__} of {namespace.__name__}"
    else:
        return None
    if not computed:
        return None
    return f"it reads {name}.{computed[0]}, which {maker} makes at each read: no guard can read it"
