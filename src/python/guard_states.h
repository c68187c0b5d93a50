// What a static guard value (python/guard_items.h) compares: the state of a Python value as it
// was when the entry was recorded. A set, bytearray or an attribute's list or dict is equal to
// itself whatever was changed in it since (`s.add(2)`, `o.cfg["scale"] = 5`): a guard holding
// the object itself matched it forever, and the call returned what the first trace computed.
// So a static is recorded as a snapshot (state_of): builtin mutable containers copied (their
// items too, a few levels deep), an object's instance attributes as such copies;
// same_state compares a value with one.
#pragma once
#include <cstring>

#include <structmember.h>  // PyMemberDef, T_OBJECT_EX: the members __slots__ makes

#include "python/common.h"

namespace kiln::python {

// The values of the __slots__ attributes of a user class's object (the members its class and
// their bases declare; an unset one is left out), as a new dict; null when it has none.
inline nb::object slot_attributes(PyObject* object) {
  nb::object found;
  PyObject* mro = Py_TYPE(object)->tp_mro;
  for (Py_ssize_t i = 0; mro != nullptr && i < PyTuple_GET_SIZE(mro); ++i) {
    auto* type = reinterpret_cast<PyTypeObject*>(PyTuple_GET_ITEM(mro, i));
    if (!(type->tp_flags & Py_TPFLAGS_HEAPTYPE) || type->tp_members == nullptr) continue;
    for (PyMemberDef* member = type->tp_members; member->name != nullptr; ++member) {
      if (member->type != T_OBJECT_EX) continue;
      nb::object value = nb::steal(PyMember_GetOne(reinterpret_cast<const char*>(object), member));
      if (!value.is_valid()) {
        PyErr_Clear();
        continue;
      }
      if (!found.is_valid()) found = nb::steal(PyDict_New());
      if (!found.is_valid() || PyDict_SetItemString(found.ptr(), member->name, value.ptr()) != 0)
        throw nb::python_error();
    }
  }
  return found;
}

// The attributes of an object whose attributes its code may read (not a class, module or
// function, whose attributes kiln reads as globals, nor a function written in C: a NumPy
// ufunc or array function, whose __dict__ holds no state its call reads, compared as itself so
// that a guard on np.sin stays one comparison): its instance dict, with the values of its
// __slots__ attributes (a dataclass(slots=True) of settings) when it has any; null for
// anything else.
inline bool is_c_function(PyObject* object) {
  static PyObject* ufunc_slot = nullptr;
  static PyObject* dispatcher_slot = nullptr;
  PyObject* const ufunc_type = made_once(ufunc_slot, [] {
    PyObject* numpy = PyImport_ImportModule("numpy");
    PyObject* type = numpy ? PyObject_GetAttrString(numpy, "ufunc") : nullptr;
    Py_XDECREF(numpy);
    if (type == nullptr) PyErr_Clear();
    return type;  // kept for the process's life
  });
  PyObject* const dispatcher_type = made_once(dispatcher_slot, [] {
    PyObject* numpy = PyImport_ImportModule("numpy");
    PyObject* sum = numpy ? PyObject_GetAttrString(numpy, "sum") : nullptr;
    PyObject* type = sum ? Py_NewRef(reinterpret_cast<PyObject*>(Py_TYPE(sum))) : nullptr;
    Py_XDECREF(sum);
    Py_XDECREF(numpy);
    if (type == nullptr) PyErr_Clear();
    return type;
  });
  PyObject* type = reinterpret_cast<PyObject*>(Py_TYPE(object));
  return PyCFunction_Check(object) || (type == ufunc_type && type != nullptr) ||
         (type == dispatcher_type && type != nullptr && !PyFunction_Check(object));
}

inline nb::object instance_attributes(PyObject* object) {
  if (PyType_Check(object) || PyModule_Check(object) || PyFunction_Check(object) ||
      PyMethod_Check(object) || is_c_function(object))
    return nb::object();
  nb::object attributes;
  if (Py_TYPE(object)->tp_dictoffset != 0) {
    attributes = nb::steal(PyObject_GenericGetDict(object, nullptr));
    if (!attributes.is_valid() || !PyDict_Check(attributes.ptr())) {
      PyErr_Clear();
      attributes = nb::object();
    }
  }
  nb::object slots = slot_attributes(object);
  if (!slots.is_valid()) return attributes;
  if (attributes.is_valid() && PyDict_Update(slots.ptr(), attributes.ptr()) != 0)
    throw nb::python_error();
  return slots;
}

// The bytes of a Python float or complex, or of a NumPy float or complex scalar (not long
// double, whose padding bytes are arbitrary); 0 bytes for other values.
inline size_t float_bytes(PyObject* value, char (&bytes)[16]) {
  if (PyFloat_CheckExact(value)) {
    double number = PyFloat_AS_DOUBLE(value);
    std::memcpy(bytes, &number, sizeof number);
    return sizeof number;
  }
  if (PyComplex_CheckExact(value)) {
    Py_complex number = reinterpret_cast<PyComplexObject*>(value)->cval;
    std::memcpy(bytes, &number.real, 8);
    std::memcpy(bytes + 8, &number.imag, 8);
    return 16;
  }
  if (!PyArray_IsScalar(value, Half) && !PyArray_IsScalar(value, Float) &&
      !PyArray_IsScalar(value, Double) && !PyArray_IsScalar(value, CFloat) &&
      !PyArray_IsScalar(value, CDouble))
    return 0;
  PyArray_Descr* descr = PyArray_DescrFromScalar(value);
  if (descr == nullptr) {
    PyErr_Clear();
    return 0;
  }
  const auto size = static_cast<size_t>(PyDataType_ELSIZE(descr));
  Py_DECREF(descr);
  if (size > sizeof bytes) return 0;
  PyArray_ScalarAsCtype(value, bytes);
  return size;
}

// `depth`: the levels of tuples still compared item by item (past them, by ==).
inline bool same_static(PyObject* value, PyObject* expected, int depth = 8) {
  if (value == expected) return true;
  if (value == nullptr || expected == nullptr || Py_TYPE(value) != Py_TYPE(expected)) return false;
  // Floats are the same static when their bits are: == takes -0.0 for 0.0 (x / -0.0 returned
  // the first call's +inf) and never a NaN for itself (a NaN argument compiled every call).
  char value_bytes[16], expected_bytes[16];
  if (size_t size = float_bytes(value, value_bytes))
    return float_bytes(expected, expected_bytes) == size &&
           std::memcmp(value_bytes, expected_bytes, size) == 0;
  // A tuple's items by the same rule: == takes (1.0, 2) for (1, 2), a set's item or a key.
  if (PyTuple_CheckExact(value) && depth > 0) {
    if (PyTuple_GET_SIZE(value) != PyTuple_GET_SIZE(expected)) return false;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(value); ++i)
      if (!same_static(PyTuple_GET_ITEM(value, i), PyTuple_GET_ITEM(expected, i), depth - 1))
        return false;
    return true;
  }
  int equal = PyObject_RichCompareBool(value, expected, Py_EQ);
  if (equal < 0) {
    PyErr_Clear();
    return false;
  }
  return equal == 1;
}

// Levels of containers and objects a snapshot follows, and the most items it copies in all:
// past them the container itself is held (equal to itself: the old guard), so that a guard
// stays cheap to record and to match.
constexpr int kStateDepth = 16;
constexpr Py_ssize_t kMostStateItems = 256;

// The marker of an object's snapshot: a tuple (marker, the object, {name: snapshot}).
inline PyObject* object_state_marker() {
  static PyObject* marker = PyUnicode_InternFromString("<kiln: object state>");
  return marker;
}

inline bool is_object_state(PyObject* value) {
  return PyTuple_CheckExact(value) && PyTuple_GET_SIZE(value) == 3 &&
         PyTuple_GET_ITEM(value, 0) == object_state_marker();
}

// The marker of a snapshot of a list or dict subclass's items (an OrderedDict, a defaultdict,
// a Counter): a tuple (marker, its class, a plain list or dict of their snapshots).
inline PyObject* subclass_state_marker() {
  static PyObject* marker = PyUnicode_InternFromString("<kiln: subclass state>");
  return marker;
}

inline bool is_subclass_state(PyObject* value) {
  return PyTuple_CheckExact(value) && PyTuple_GET_SIZE(value) == 3 &&
         PyTuple_GET_ITEM(value, 0) == subclass_state_marker();
}

// Mutable sequences that are neither lists nor arrays, whose items a snapshot copies (as a
// subclass state: their class and a plain list): collections.deque and array.array.
inline bool is_other_mutable_sequence(PyObject* value) {
  // (held for the process's life: types are never freed while their modules are imported)
  static PyObject* deque_slot = nullptr;
  static PyObject* array_slot = nullptr;
  PyObject* const deque = made_once(deque_slot, [] {
    return nb::object(nb::module_::import_("collections").attr("deque")).release().ptr();
  });
  PyObject* const array = made_once(array_slot, [] {
    return nb::object(nb::module_::import_("array").attr("array")).release().ptr();
  });
  return PyObject_TypeCheck(value, reinterpret_cast<PyTypeObject*>(deque)) ||
         PyObject_TypeCheck(value, reinterpret_cast<PyTypeObject*>(array));
}

// The items a snapshot may still copy, and whether it held a mutable container as itself
// (too big or too deep to copy: a change made to it in place would go unseen). The objects
// inside a static's containers and attributes (`o.items[0]`) have a budget of their own and
// never make it incomplete: they were held as themselves before, and one holding a big
// structure the code never reads (a logger's manager) must not send the call to NumPy.
struct SnapshotBudget {
  Py_ssize_t items = kMostStateItems;
  Py_ssize_t nested_items = kMostStateItems;
  bool incomplete = false;
  int nested_objects = 0;  // the objects being copied around the current value
  Py_ssize_t& left() { return nested_objects > 0 ? nested_items : items; }
};

inline nb::object container_state(PyObject* value, int depth, SnapshotBudget& budget);

// A dict's (key, value) pairs, as a new list, in the order iterating it gives: an OrderedDict's
// own order (move_to_end changes it, not the order of the dict beneath, which PyDict_Items
// gives).
inline PyObject* dict_items(PyObject* dict) {
  return PyDict_CheckExact(dict) ? PyDict_Items(dict) : PyMapping_Items(dict);
}

// An object's snapshot: (marker, the object, {name: snapshot of the value}), its attributes'
// values one level below it. `nested`: an object inside the static (held as itself where its
// attributes are more than its budget has left).
inline nb::object object_state(PyObject* value, PyObject* attributes, int depth,
                               SnapshotBudget& budget, bool nested) {
  budget.nested_objects += nested;
  struct Leave {
    SnapshotBudget& budget;
    bool nested;
    ~Leave() { budget.nested_objects -= nested; }
  } leave{budget, nested};
  if (nested && PyDict_GET_SIZE(attributes) > budget.left()) return nb::borrow(value);
  budget.left() -= PyDict_GET_SIZE(attributes);
  nb::object items = nb::steal(PyDict_Items(attributes));
  nb::object states = nb::steal(PyDict_New());
  if (!items.is_valid() || !states.is_valid()) throw nb::python_error();
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items.ptr()); ++i) {
    PyObject* item = PyList_GET_ITEM(items.ptr(), i);
    nb::object state = container_state(PyTuple_GET_ITEM(item, 1), depth - 1, budget);
    if (PyDict_SetItem(states.ptr(), PyTuple_GET_ITEM(item, 0), state.ptr()) != 0)
      throw nb::python_error();
  }
  return nb::steal(PyTuple_Pack(3, object_state_marker(), value, states.ptr()));
}

// A snapshot of `value`: a copy of a list, dict, tuple, set or bytearray (of snapshots of their
// items; a subclass state for a list or dict subclass, a deque or an array.array); an object
// state for a user object inside one (`o.items[0].s`: held as itself, an assignment to its
// attribute went unseen and the call returned the first trace's value); `value` itself for
// anything else, or where it is too big or deep. Arrays are held as they are: those the
// function reads are inputs, read at each call.
inline nb::object container_state(PyObject* value, int depth, SnapshotBudget& budget) {
  const bool sequence = PyList_Check(value) || PyTuple_CheckExact(value) ||
                        is_other_mutable_sequence(value);
  // (a types.MappingProxyType too: held as itself, a change to the dict it shows went unseen)
  const bool mapping = PyDict_Check(value) || PyObject_TypeCheck(value, &PyDictProxy_Type);
  const bool set = PySet_CheckExact(value) || PyFrozenSet_CheckExact(value);
  if (!(sequence || mapping || set || PyByteArray_CheckExact(value))) {
    nb::object attributes = depth > 0 ? instance_attributes(value) : nb::object();
    return attributes.is_valid() ? object_state(value, attributes.ptr(), depth, budget, true)
                                 : nb::borrow(value);
  }
  auto held = [&] {
    budget.incomplete = budget.incomplete || (!PyTuple_CheckExact(value) &&
                                              !PyFrozenSet_CheckExact(value) &&
                                              budget.nested_objects == 0);
    return nb::borrow(value);
  };
  if (depth <= 0) return held();
  Py_ssize_t size = PyObject_Size(value);
  if (size < 0) throw nb::python_error();
  if (size > budget.left()) return held();
  budget.left() -= size;
  if (set) {
    // {item: item}: the item each of a later set's finds, compared as a static ({1.0, 2}
    // equals {1, 2}, whose np.array is int64: the call returned the first trace's dtype).
    nb::object items = nb::steal(PySequence_List(value));
    nb::object elements = nb::steal(PyDict_New());
    if (!items.is_valid() || !elements.is_valid()) throw nb::python_error();
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items.ptr()); ++i) {
      PyObject* item = PyList_GET_ITEM(items.ptr(), i);
      if (PyDict_SetItem(elements.ptr(), item, item) != 0) throw nb::python_error();
    }
    return nb::steal(PyTuple_Pack(3, subclass_state_marker(),
                                  reinterpret_cast<PyObject*>(Py_TYPE(value)), elements.ptr()));
  }
  if (!sequence && !mapping) {
    nb::object copy = nb::steal(PyByteArray_FromObject(value));
    if (!copy.is_valid()) throw nb::python_error();
    return copy;
  }
  // Over a copy of the items: a list or dict may change while user code (repr, __eq__) runs.
  nb::object items = nb::steal(mapping ? dict_items(value) : PySequence_List(value));
  if (!items.is_valid()) throw nb::python_error();
  nb::object copy = nb::steal(mapping ? PyDict_New() : PyList_New(0));
  if (!copy.is_valid()) throw nb::python_error();
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items.ptr()); ++i) {
    PyObject* item = PyList_GET_ITEM(items.ptr(), i);
    PyObject* element = mapping ? PyTuple_GET_ITEM(item, 1) : item;
    nb::object state = container_state(element, depth - 1, budget);
    int failed = mapping ? PyDict_SetItem(copy.ptr(), PyTuple_GET_ITEM(item, 0), state.ptr())
                         : PyList_Append(copy.ptr(), state.ptr());
    if (failed != 0) throw nb::python_error();
  }
  if (PyTuple_CheckExact(value)) return nb::steal(PyList_AsTuple(copy.ptr()));
  if (PyList_CheckExact(value) || PyDict_CheckExact(value)) return copy;
  return nb::steal(PyTuple_Pack(3, subclass_state_marker(),
                                reinterpret_cast<PyObject*>(Py_TYPE(value)), copy.ptr()));
}

// A static's snapshot: container_state, or for an object with instance attributes (an
// argument's settings object) a tuple (marker, the object, {name: container_state}).
// `incomplete`: set where a mutable container in it was held as itself (snapshot_complete).
inline nb::object state_of(PyObject* value, bool* incomplete = nullptr) {
  SnapshotBudget budget;
  // A list or dict subclass (an OrderedDict) is compared by its items, not its attributes.
  nb::object attributes = PyList_Check(value) || PyDict_Check(value)
                              ? nb::object() : instance_attributes(value);
  nb::object state;
  if (!attributes.is_valid()) {
    state = container_state(value, kStateDepth, budget);
  } else if (PyDict_GET_SIZE(attributes.ptr()) <= budget.items) {
    state = object_state(value, attributes.ptr(), kStateDepth, budget, false);
  } else {  // too many to copy: a shallow copy, as before
    budget.incomplete = true;
    nb::object states = nb::steal(PyDict_Copy(attributes.ptr()));
    if (!states.is_valid()) throw nb::python_error();
    state = nb::steal(PyTuple_Pack(3, object_state_marker(), value, states.ptr()));
  }
  if (incomplete != nullptr) *incomplete = budget.incomplete;
  return state;
}

inline bool same_state(PyObject* value, PyObject* state);

// Whether the dict `items` holds the keys of `states` (a dict of snapshots) in the same order,
// each key the same static and each value in its state. The order and the keys' types count:
// list(d.values()) of {"b": 2, "a": 1} and of {"a": 1, "b": 2}, or list(d) of {1.0: x} and of
// {1: x}, differ (an attribute's dict reordered, an OrderedDict's move_to_end, returned the
// first trace's order). Walked over a copy of the items (as match_dict does): __eq__ of a key or
// value (user code) may change the dict, and PyDict_Next over a changing dict is undefined; the
// snapshot `states` no user code can reach.
inline bool same_items(PyObject* items, PyObject* states) {
  if (PyDict_Check(items) && PyDict_GET_SIZE(items) != PyDict_GET_SIZE(states)) return false;
  nb::object pairs = nb::steal(dict_items(items));
  if (!pairs.is_valid()) {
    PyErr_Clear();
    return false;
  }
  if (PyList_GET_SIZE(pairs.ptr()) != PyDict_GET_SIZE(states)) return false;
  PyObject *key, *recorded;
  Py_ssize_t position = 0;
  for (Py_ssize_t i = 0; PyDict_Next(states, &position, &key, &recorded); ++i) {
    PyObject* pair = PyList_GET_ITEM(pairs.ptr(), i);
    if (!same_static(PyTuple_GET_ITEM(pair, 0), key)) return false;
    if (!same_state(PyTuple_GET_ITEM(pair, 1), recorded)) return false;
  }
  return true;
}

// Whether the set `value` holds the items of `elements` ({item: item}, in the order the set
// iterated them), each the same static, in that order: {1, 9} and {9, 1} are equal but iterate
// in the order they were filled (1 and 9 share a slot), so list(s) differs and a guard by
// equality returned the first trace's order.
inline bool same_set_items(PyObject* value, PyObject* elements) {
  if (PySet_GET_SIZE(value) != PyDict_GET_SIZE(elements)) return false;
  nb::object items = nb::steal(PySequence_List(value));  // __eq__ (user code) may change it
  if (!items.is_valid()) {
    PyErr_Clear();
    return false;
  }
  if (PyList_GET_SIZE(items.ptr()) != PyDict_GET_SIZE(elements)) return false;
  PyObject *recorded, *unused;
  Py_ssize_t position = 0;
  for (Py_ssize_t i = 0; PyDict_Next(elements, &position, &recorded, &unused); ++i)
    if (!same_static(PyList_GET_ITEM(items.ptr(), i), recorded)) return false;
  return true;
}

// Whether `object`'s instance attributes are those `states` recorded.
inline bool same_attribute_states(PyObject* object, PyObject* states) {
  nb::object now = instance_attributes(object);
  return now.is_valid() && same_items(now.ptr(), states);
}

// Whether `value` is in the state `state` (state_of) recorded.
inline bool same_state(PyObject* value, PyObject* state) {
  if (value == state) return true;  // held as itself (a snapshot is never the value)
  if (value == nullptr) return false;
  if (PyArray_Check(value) && PyArray_Check(state)) return true;  // inputs, read at each call
  if (is_object_state(state))
    return same_static(value, PyTuple_GET_ITEM(state, 1)) &&
           same_attribute_states(value, PyTuple_GET_ITEM(state, 2));
  if (is_subclass_state(state)) {
    if (reinterpret_cast<PyObject*>(Py_TYPE(value)) != PyTuple_GET_ITEM(state, 1)) return false;
    state = PyTuple_GET_ITEM(state, 2);  // the plain list or dict of the items' snapshots
  } else if (Py_TYPE(value) != Py_TYPE(state)) {
    return false;
  }
  if (PyAnySet_Check(value)) return PyDict_CheckExact(state) && same_set_items(value, state);
  if (PyDict_CheckExact(state)) return same_items(value, state);
  if (!PyList_CheckExact(state) && !PyTuple_CheckExact(state)) return same_static(value, state);
  nb::object listed;  // a deque's or array.array's items, as a list (no user code sees it)
  if (!PyList_Check(value) && !PyTuple_Check(value)) {
    listed = nb::steal(PySequence_List(value));
    if (!listed.is_valid()) {
      PyErr_Clear();
      return false;
    }
    value = listed.ptr();
  }
  // A list (or list subclass) or tuple, item by item: its length checked again at each (an
  // __eq__ may change a list), each item held while it is compared.
  const bool list = PyList_Check(value);
  const Py_ssize_t size = PyList_Check(state) ? PyList_GET_SIZE(state) : PyTuple_GET_SIZE(state);
  for (Py_ssize_t i = 0;; ++i) {
    if ((list ? PyList_GET_SIZE(value) : PyTuple_GET_SIZE(value)) != size) return false;
    if (i == size) return true;
    nb::object item = nb::borrow(list ? PyList_GET_ITEM(value, i) : PyTuple_GET_ITEM(value, i));
    PyObject* recorded =
        PyList_Check(state) ? PyList_GET_ITEM(state, i) : PyTuple_GET_ITEM(state, i);
    if (!same_state(item.ptr(), recorded)) return false;
  }
}

// The state of a read (below) that found nothing: an unset cell, a deleted attribute.
inline PyObject* absent_marker() {
  static PyObject* marker = PyUnicode_InternFromString("<kiln: absent>");
  return marker;
}

// What a static argument reads beyond itself (python/kiln/_argument_reads.py): a callback's
// globals, closure variables and defaults, a settings object's class attributes. The argument
// is equal to itself whatever changed in them, so each is a (holder, name, state, label) read
// again at every call: a dict's item, else the holder's attribute (a cell's cell_contents, a
// class's data attribute, a function's __defaults__).
inline nb::object read_from(PyObject* holder, PyObject* name) {
  nb::object value = PyDict_Check(holder)
                         ? nb::borrow(PyDict_GetItemWithError(holder, name))
                         : nb::steal(PyObject_GetAttr(holder, name));
  if (!value.is_valid() && PyErr_Occurred()) PyErr_Clear();  // gone: no longer the same
  return value;
}

// The reads (a list of (holder, name, label)) with a snapshot of each value now: a tuple of
// (holder, name, state, label).
inline nb::object states_of_reads(PyObject* reads) {
  nb::object items = nb::steal(PySequence_Tuple(reads));
  if (!items.is_valid()) throw nb::python_error();
  nb::list recorded;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(items.ptr()); ++i) {
    PyObject* read = PyTuple_GET_ITEM(items.ptr(), i);
    if (!PyTuple_Check(read) || PyTuple_GET_SIZE(read) != 3)
      throw nb::type_error("kiln: a read is (holder, name, label)");
    PyObject* holder = PyTuple_GET_ITEM(read, 0);
    PyObject* name = PyTuple_GET_ITEM(read, 1);
    nb::object value = read_from(holder, name);
    nb::object state = value.is_valid() ? state_of(value.ptr()) : nb::borrow(absent_marker());
    recorded.append(nb::make_tuple(nb::handle(holder), nb::handle(name), state,
                                   nb::handle(PyTuple_GET_ITEM(read, 2))));
  }
  return nb::tuple(recorded);
}

// The label of the first read (states_of_reads) whose value is no longer the one recorded;
// null when every one is.
inline PyObject* changed_read(PyObject* reads) {
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(reads); ++i) {
    PyObject* read = PyTuple_GET_ITEM(reads, i);
    nb::object value = read_from(PyTuple_GET_ITEM(read, 0), PyTuple_GET_ITEM(read, 1));
    PyObject* state = PyTuple_GET_ITEM(read, 2);
    const bool same = value.is_valid() ? state != absent_marker() && same_state(value.ptr(), state)
                                       : state == absent_marker();
    if (!same) return PyTuple_GET_ITEM(read, 3);
  }
  return nullptr;
}

}  // namespace kiln::python
