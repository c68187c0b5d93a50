// The guarded cache's guard (python/guarded_cache.cpp): its items, one per container, array,
// static value or dynamic number of the arguments and the environment, in _pytree.flatten_call's
// order; the walk that matches a call against them (Matcher) and the one that records them
// from the call just traced (Recorder).
#pragma once
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "python/common.h"
#include "python/guard_states.h"

namespace kiln::python {

// Containers first: kinds from Array on are the pytree's leaves.
enum class ItemKind : uint8_t {
  Tuple, List, Dict, NamedTuple, Object, Array, Static, Absent, Number
};

struct GuardItem {
  ItemKind kind;
  std::string path;  // "argument 0[1]", "keyword argument 'x'", "global 'W'": for messages
  Py_ssize_t length = 0;  // containers
  nb::object keys;        // dict, object: a tuple of the keys (attribute names) in order
  DType dtype = DType::Float64;  // arrays
  bool contiguous = true;
  std::vector<int64_t> shape, strides;  // strides in elements, only when not contiguous
  nb::object value;                     // statics; a namedtuple's or object's class
  // A static object with instance attributes (a dataclass of settings; not a global object,
  // whose attributes are reads of their own): a snapshot of them when recorded
  // (guard_states.h). The same object is equal to itself whatever was assigned to its
  // attributes since, so the guard also compares them (same_attribute_states).
  nb::object attributes;
  // A static argument's reads beyond itself (states_of_reads): a callback's globals and
  // closure, a settings object's class attributes; null where it has none.
  nb::object reads;
  bool is_float = false;                // numbers: float (else int)
};

// A dynamic number's 0-d array (float64 or int64); null where `object` is not such a number.
inline nb::object number_array(PyObject* object, bool is_float) {
  // (null: a read that found nothing now, a dynamic number's slot deleted: `del self.k`)
  if (object == nullptr || (is_float ? !PyFloat_CheckExact(object) : !PyLong_CheckExact(object)))
    return nb::object();
  double real = 0;
  long long integer = 0;
  if (is_float) {
    real = PyFloat_AS_DOUBLE(object);
  } else {
    int overflow = 0;
    integer = PyLong_AsLongLongAndOverflow(object, &overflow);
    if (overflow != 0) return nb::object();
  }
  nb::object array =
      nb::steal(PyArray_SimpleNew(0, nullptr, is_float ? NPY_FLOAT64 : NPY_INT64));
  if (!array.is_valid()) throw nb::python_error();
  void* data = PyArray_DATA(reinterpret_cast<PyArrayObject*>(array.ptr()));
  if (is_float) std::memcpy(data, &real, sizeof real);
  else std::memcpy(data, &integer, sizeof integer);
  return array;
}

inline bool is_number(PyObject* object) {
  return object != nullptr && (PyFloat_CheckExact(object) || PyLong_CheckExact(object));
}

inline std::string type_name(PyObject* object) {
  return object == nullptr ? "<undefined>" : Py_TYPE(object)->tp_name;
}

// What a container item guards, for messages: "tuple", or a namedtuple's or dataclass's name.
inline std::string kind_name(const GuardItem& item) {
  switch (item.kind) {
    case ItemKind::Tuple: return "tuple";
    case ItemKind::List: return "list";
    case ItemKind::Dict: return "dict";
    case ItemKind::Array: return "numpy.ndarray";
    case ItemKind::NamedTuple:
    case ItemKind::Object: return reinterpret_cast<PyTypeObject*>(item.value.ptr())->tp_name;
    default: return "";
  }
}

// str() or repr() of an object as UTF-8, for messages ("" if even that fails).
inline std::string text_of(PyObject* object, bool repr) {
  nb::object text = nb::steal(repr ? PyObject_Repr(object) : PyObject_Str(object));
  const char* utf8 = text ? PyUnicode_AsUTF8(text.ptr()) : nullptr;
  if (utf8 == nullptr) {
    PyErr_Clear();
    return "";
  }
  return utf8;
}

inline std::string repr_of(PyObject* object) {
  if (object == nullptr) return "<undefined>";
  std::string result = text_of(object, true);
  return result.size() > 60 ? result.substr(0, 57) + "..." : result;
}

inline std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    text += std::to_string(shape[i]) + (shape.size() == 1 || i + 1 < shape.size() ? "," : "");
  return text + ")";
}

// One walk of the arguments against one entry's guard. `why`, when given, receives the first
// failed guard in words (only on the slow path: the recompile log).
class Matcher {
 public:
  // Item 0, the call shape, is checked by the caller; the walk starts at item 1.
  // changed: where given, a static number whose value changed (same type) is collected (its
  // leaf index) instead of failing the walk.
  Matcher(const std::vector<GuardItem>& items, std::vector<nb::object>& arrays, std::string* why,
          std::vector<size_t>* changed = nullptr)
      : items_(items), arrays_(arrays), why_(why), changed_(changed) {}

  bool match(PyObject* object) {
    const GuardItem& item = items_[position_++];
    if (item.kind >= ItemKind::Array) ++leaves_;  // the leaves, in _pytree.flatten's order
    switch (item.kind) {
      case ItemKind::Array: return match_array(item, object);
      case ItemKind::Number: {
        nb::object array = number_array(object, item.is_float);
        if (!array.is_valid())
          return fail([&] {
            return item.path + " is no longer a" + (item.is_float ? " float" : "n int in int64") +
                   " (" + repr_of(object) + ")";
          });
        arrays_.push_back(std::move(array));
        return true;
      }
      case ItemKind::Static:
        if (same_state(object, item.value.ptr())) {
          if (item.attributes.is_valid() && !same_attribute_states(object, item.attributes.ptr()))
            return fail([&] { return "an attribute of " + item.path + " changed"; });
          return reads_hold(item);
        }
        if (changed_ != nullptr && is_number(object) && is_number(item.value.ptr()) &&
            Py_TYPE(object) == Py_TYPE(item.value.ptr())) {
          changed_->push_back(leaves_ - 1);
          return true;
        }
        return fail([&] {
          return "value of " + item.path + " changed from " + repr_of(item.value.ptr()) + " to " +
                 repr_of(object);
        });
      case ItemKind::Absent:
        return object == nullptr || fail([&] { return item.path + " is now defined"; });
      case ItemKind::Tuple:
        if (object == nullptr || !PyTuple_CheckExact(object)) return fail_type(item, object);
        if (PyTuple_GET_SIZE(object) != item.length)
          return fail_length(item, PyTuple_GET_SIZE(object));
        for (Py_ssize_t i = 0; i < item.length; ++i)
          if (!match(PyTuple_GET_ITEM(object, i))) return false;
        return true;
      case ItemKind::List:
        if (object == nullptr || !PyList_CheckExact(object)) return fail_type(item, object);
        // Checked before the walk too: the loop alone never ran for an empty list's entry,
        // which then matched a list of any length.
        if (PyList_GET_SIZE(object) != item.length)
          return fail_length(item, PyList_GET_SIZE(object));
        for (Py_ssize_t i = 0; i < item.length; ++i) {
          // A static's __eq__ (user code) may change the list under the walk: re-check its
          // length and hold each item.
          if (PyList_GET_SIZE(object) != item.length)
            return fail_length(item, PyList_GET_SIZE(object));
          nb::object element = nb::borrow(PyList_GET_ITEM(object, i));
          if (!match(element.ptr())) return false;
        }
        return true;
      case ItemKind::Dict: return match_dict(item, object);
      case ItemKind::NamedTuple:
        if (object == nullptr || Py_TYPE(object) != reinterpret_cast<PyTypeObject*>(item.value.ptr()))
          return fail_type(item, object);
        if (PyTuple_GET_SIZE(object) != item.length)
          return fail_length(item, PyTuple_GET_SIZE(object));
        for (Py_ssize_t i = 0; i < item.length; ++i)
          if (!match(PyTuple_GET_ITEM(object, i))) return false;
        return true;
      case ItemKind::Object: {
        if (object == nullptr || Py_TYPE(object) != reinterpret_cast<PyTypeObject*>(item.value.ptr()))
          return fail_type(item, object);
        nb::object attributes = instance_attributes(object);
        if (!attributes.is_valid()) return fail_type(item, object);
        return match_dict(item, attributes.ptr()) && reads_hold(item);
      }
    }
    return false;
  }

 private:
  // Whether what an argument reads beyond itself (GuardItem::reads) is as recorded.
  bool reads_hold(const GuardItem& item) {
    PyObject* changed = item.reads.is_valid() ? changed_read(item.reads.ptr()) : nullptr;
    return changed == nullptr || fail([&] {
      return text_of(changed, false) + " (read by " + item.path + ") changed";
    });
  }

  bool match_array(const GuardItem& item, PyObject* object) {
    if (object == nullptr || !PyArray_CheckExact(object)) return fail_type(item, object);
    auto* array = reinterpret_cast<PyArrayObject*>(object);
    std::optional<DType> dtype = dtype_of_array(array);
    if (!dtype || *dtype != item.dtype) {
      return fail([&] {
        return "dtype of " + item.path + " changed from " + std::string(dtype_name(item.dtype)) +
               " to " + text_of(reinterpret_cast<PyObject*>(PyArray_DESCR(array)), false);
      });
    }
    int ndim = PyArray_NDIM(array);
    const npy_intp* dims = PyArray_DIMS(array);
    bool same_shape = ndim == static_cast<int>(item.shape.size());
    for (int d = 0; same_shape && d < ndim; ++d) same_shape = dims[d] == item.shape[size_t(d)];
    if (!same_shape) {
      return fail([&] {
        return "shape of " + item.path + " changed from " + shape_text(item.shape) + " to " +
               shape_text(std::vector<int64_t>(dims, dims + ndim));
      });
    }
    if (!PyArray_ISALIGNED(array)) return fail([&] { return item.path + " is not aligned"; });
    if (item.contiguous) {
      if (!PyArray_IS_C_CONTIGUOUS(array))
        return fail([&] { return "layout of " + item.path + " changed from contiguous"; });
    } else {
      const npy_intp* strides = PyArray_STRIDES(array);
      int64_t size = dtype_size(item.dtype);
      bool same = !PyArray_IS_C_CONTIGUOUS(array);
      for (int d = 0; same && d < ndim; ++d) same = strides[d] == item.strides[size_t(d)] * size;
      if (!same) return fail([&] { return "strides of " + item.path + " changed"; });
    }
    arrays_.push_back(nb::borrow(object));
    return true;
  }

  bool match_dict(const GuardItem& item, PyObject* object) {
    if (object == nullptr || !PyDict_CheckExact(object)) return fail_type(item, object);
    if (PyDict_GET_SIZE(object) != item.length) return fail_length(item, PyDict_GET_SIZE(object));
    // A snapshot of the items: __eq__ of a key or value (user code) may change the dict, and
    // PyDict_Next over a changing dict is undefined.
    nb::object items = nb::steal(PyDict_Items(object));
    if (!items.is_valid()) throw nb::python_error();
    if (PyList_GET_SIZE(items.ptr()) != item.length)
      return fail_length(item, PyList_GET_SIZE(items.ptr()));
    for (Py_ssize_t index = 0; index < item.length; ++index) {
      PyObject* pair = PyList_GET_ITEM(items.ptr(), index);
      if (!same_static(PyTuple_GET_ITEM(pair, 0), PyTuple_GET_ITEM(item.keys.ptr(), index)))
        return fail([&] { return "keys of " + item.path + " changed"; });
      if (!match(PyTuple_GET_ITEM(pair, 1))) return false;
    }
    return true;
  }

  bool fail_type(const GuardItem& item, PyObject* object) {
    return fail([&] {
      return "type of " + item.path + " changed from " + kind_name(item) + " to " +
             type_name(object);
    });
  }
  bool fail_length(const GuardItem& item, Py_ssize_t length) {
    return fail([&] {
      return "length of " + item.path + " changed from " + std::to_string(item.length) + " to " +
             std::to_string(length);
    });
  }
  // Messages are built only on the slow path (why_ set): the fast path just returns false.
  template <class Message>
  bool fail(Message message) {
    if (why_ != nullptr && why_->empty()) *why_ = message();
    return false;
  }

  const std::vector<GuardItem>& items_;
  std::vector<nb::object>& arrays_;  // strong references: user code runs during the walk
  std::string* why_;
  std::vector<size_t>* changed_;
  size_t position_ = 1;
  size_t leaves_ = 0;
};

// The node kinds of a _pytree spec, (kind, ...children) tuples: the Python side decides what is
// a container (python/kiln/_pytree.py: the same numbers) and the recorder follows its spec.
enum SpecKind : long { kSpecTuple = 0, kSpecList, kSpecDict, kSpecLeaf, kSpecNamed, kSpecObject };

// Builds a guard from a call's arguments and environment before it is traced, following the
// _pytree spec they were flattened into, so that array leaf i of the guard is graph input i.
class Recorder {
 public:
  // dynamic: leaf indices (flatten order) of numbers that are graph inputs, not statics.
  // reads: {leaf index or ("object", n): [(holder, name, label), ...]}, what static argument
  // leaves and object containers read beyond themselves (python/kiln/_argument_reads.py), or
  // None.
  Recorder(std::vector<GuardItem>& items, const std::vector<size_t>& dynamic, nb::handle reads)
      : items_(items), dynamic_(dynamic), reads_(reads) {}

  void record(PyObject* object, std::string path, PyObject* spec) {
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) < 1)
      throw Error(ErrorKind::Internal, "kiln: malformed pytree spec");
    long kind = PyLong_AsLong(PyTuple_GET_ITEM(spec, 0));
    if (kind == kSpecLeaf) return record_leaf(object, std::move(path));
    PyObject* children = PyTuple_GET_ITEM(spec, PyTuple_GET_SIZE(spec) - 1);
    GuardItem item;
    item.path = std::move(path);
    if (kind == kSpecNamed || kind == kSpecObject) {
      item.value = nb::borrow(PyTuple_GET_ITEM(spec, 1));  // the class
      if (object == nullptr || Py_TYPE(object) != reinterpret_cast<PyTypeObject*>(item.value.ptr()))
        changed(item.path);
    }
    if (kind == kSpecTuple || kind == kSpecList || kind == kSpecNamed) {
      bool list = kind == kSpecList;
      if (object == nullptr || (kind == kSpecTuple && !PyTuple_CheckExact(object)) ||
          (list && !PyList_CheckExact(object)))
        changed(item.path);
      // A tuple cannot change; a list can while user code runs (repr() of a static), so it
      // is walked over a copy.
      nb::object elements = list ? nb::steal(PySequence_Tuple(object)) : nb::borrow(object);
      if (!elements.is_valid()) throw nb::python_error();
      item.kind = kind == kSpecNamed ? ItemKind::NamedTuple : list ? ItemKind::List : ItemKind::Tuple;
      item.length = PyTuple_GET_SIZE(elements.ptr());
      if (item.length != PyList_GET_SIZE(children)) changed(item.path);
      std::string prefix = item.path;
      items_.push_back(std::move(item));
      for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(elements.ptr()); ++i)
        record(PyTuple_GET_ITEM(elements.ptr(), i), prefix + "[" + std::to_string(i) + "]",
               PyList_GET_ITEM(children, i));
      return;
    }
    if (kind != kSpecDict && kind != kSpecObject)
      throw Error(ErrorKind::Internal, "kiln: malformed pytree spec");
    bool is_object = kind == kSpecObject;
    if (object == nullptr || (!is_object && !PyDict_CheckExact(object))) changed(item.path);
    nb::object mapping = is_object ? instance_attributes(object) : nb::borrow(object);
    if (!mapping.is_valid()) changed(item.path);
    item.kind = is_object ? ItemKind::Object : ItemKind::Dict;
    if (is_object) attach_reads(item, nb::make_tuple("object", objects_++));
    // A snapshot: repr() of a key runs user code, which may change the dict.
    nb::object pairs = nb::steal(PyDict_Items(mapping.ptr()));
    if (!pairs.is_valid()) throw nb::python_error();
    PyObject* keys = PyTuple_GET_ITEM(spec, PyTuple_GET_SIZE(spec) - 2);
    item.length = PyList_GET_SIZE(pairs.ptr());
    if (item.length != PyList_GET_SIZE(children) || item.length != PyList_GET_SIZE(keys))
      changed(item.path);
    nb::list key_list;
    std::vector<std::pair<nb::object, std::string>> entries;
    for (Py_ssize_t i = 0; i < item.length; ++i) {
      PyObject* pair = PyList_GET_ITEM(pairs.ptr(), i);
      PyObject* key = PyTuple_GET_ITEM(pair, 0);
      if (key != PyList_GET_ITEM(keys, i)) changed(item.path);
      key_list.append(nb::handle(key));
      entries.emplace_back(nb::borrow(PyTuple_GET_ITEM(pair, 1)),
                           is_object ? item.path + "." + text_of(key, false)
                                     : item.path + "[" + repr_of(key) + "]");
    }
    item.keys = nb::tuple(key_list);
    items_.push_back(std::move(item));
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(children); ++i)
      record(entries[size_t(i)].first.ptr(), entries[size_t(i)].second,
             PyList_GET_ITEM(children, i));
  }

 private:
  // The reads given for this leaf index or ("object", n), the n-th object container.
  void attach_reads(GuardItem& item, nb::handle key) {
    if (!PyDict_Check(reads_.ptr())) return;
    PyObject* reads = PyDict_GetItemWithError(reads_.ptr(), key.ptr());
    if (reads == nullptr && PyErr_Occurred()) throw nb::python_error();
    if (reads != nullptr) item.reads = states_of_reads(reads);
  }

  [[noreturn]] static void changed(const std::string& path) {
    throw Error(ErrorKind::Internal,
                "kiln: " + path + " changed while kiln read the arguments (user code ran)");
  }

  void record_leaf(PyObject* object, std::string path) {
    GuardItem item;
    item.path = std::move(path);
    const size_t leaf = leaves_++;
    const bool dynamic = std::find(dynamic_.begin(), dynamic_.end(), leaf) != dynamic_.end();
    if (dynamic && object != nullptr && number_array(object, PyFloat_CheckExact(object)).is_valid()) {
      item.kind = ItemKind::Number;
      item.is_float = PyFloat_CheckExact(object);
    } else if (object == nullptr) {
      item.kind = ItemKind::Absent;
    } else if (PyArray_CheckExact(object)) {
      auto* array = reinterpret_cast<PyArrayObject*>(object);
      std::optional<Array> borrowed = borrow_array(array);
      if (!borrowed)
        throw Error(ErrorKind::Unsupported,
                    error_message("compile", "",
                                  item.path + " has a dtype or memory layout kiln cannot read "
                                              "(complex, object, byte-swapped or misaligned)"));
      item.kind = ItemKind::Array;
      item.dtype = borrowed->dtype();
      item.shape = borrowed->shape();
      item.contiguous = PyArray_IS_C_CONTIGUOUS(array);
      if (!item.contiguous) item.strides = borrowed->strides();
    } else if (PyArray_Check(object)) {
      throw Error(ErrorKind::Unsupported,
                  error_message("compile", "", item.path + " is an ndarray subclass (" +
                                                   type_name(object) + ")"));
    } else {
      item.kind = ItemKind::Static;
      // A snapshot (guard_states.h): a set changed in place since is not the one recorded.
      nb::object state = state_of(object);
      item.value = is_object_state(state.ptr()) ? nb::borrow(object) : state;
      // Any object but a global one, whose attributes the function names are guards and
      // inputs of their own (python/kiln/_environment.py): arguments, closure variables,
      // objects in self's or a global object's attributes (self.config.scale); the lists,
      // dicts and sets in those attributes are compared by their contents (state_of).
      // (The global itself: an object inside a global's list or dict is read through no
      // attribute of its own, `objs[1].get("a")`, and is compared by its attributes.)
      const bool global_object = item.path.rfind("global '", 0) == 0 &&
                                 item.path.find_first_of("[.", 8) == std::string::npos;
      if (!global_object && is_object_state(state.ptr()))
        item.attributes = nb::borrow(PyTuple_GET_ITEM(state.ptr(), 2));
      attach_reads(item, nb::int_(leaf));
    }
    items_.push_back(std::move(item));
  }

  std::vector<GuardItem>& items_;
  const std::vector<size_t>& dynamic_;
  nb::handle reads_;
  size_t leaves_ = 0, objects_ = 0;
};

inline std::string describe(const GuardItem& item) {
  switch (item.kind) {
    case ItemKind::Array: {
      std::string text = item.path + ": ndarray " + std::string(dtype_name(item.dtype)) + " " +
                         shape_text(item.shape);
      return text + (item.contiguous ? " contiguous" : " strides " + shape_text(item.strides));
    }
    case ItemKind::Static: return item.path + " == " + repr_of(item.value.ptr());
    case ItemKind::Number:
      return item.path + (item.is_float ? ": float" : ": int in int64") + " (dynamic)";
    case ItemKind::Absent: return item.path + " is undefined";
    case ItemKind::Tuple: return item.path + ": tuple of " + std::to_string(item.length);
    case ItemKind::List: return item.path + ": list of " + std::to_string(item.length);
    case ItemKind::Dict: return item.path + ": dict with keys " + repr_of(item.keys.ptr());
    case ItemKind::NamedTuple:
      return item.path + ": " + kind_name(item) + " of " + std::to_string(item.length);
    case ItemKind::Object:
      return item.path + ": " + kind_name(item) + " with attributes " + repr_of(item.keys.ptr());
  }
  return "";
}

}  // namespace kiln::python
