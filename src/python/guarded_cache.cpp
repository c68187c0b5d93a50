// GuardedCache: the in-process cache level of one compiled Python function, and its call path.
// A call walks the arguments (args tuple, kwargs dict, then the globals and closure cells the
// function reads) once per cached entry, in C++, comparing each item with the entry's guard:
// containers (exact tuple/list/dict: type, length, keys), arrays (dtype, shape, layout class:
// C-contiguous or the exact element strides), static values (same type and ==) and dynamic
// numbers (a Python float, or an int that fits int64: a 0-d input of the graph, whatever its
// value; the driver makes a number dynamic once a call changes it, as Dynamo's automatic
// dynamic does). On a hit it
// borrows the arrays, runs the entry's graph-break checks and graph, writes mutated inputs back
// and rebuilds the output pytree; on a miss it returns the MISS sentinel and the Python driver
// traces, compiles and calls add().
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstring>

#include "api/logging.h"
#include "python/aliasing.h"
#include "python/common.h"
#include "python/output_spec.h"

namespace kiln::python {
namespace {

enum class ItemKind : uint8_t { Tuple, List, Dict, Array, Static, Absent, Number };

struct GuardItem {
  ItemKind kind;
  std::string path;  // "argument 0[1]", "keyword argument 'x'", "global 'W'": for messages
  Py_ssize_t length = 0;  // containers
  nb::object keys;        // dict: a tuple of the keys in order
  DType dtype = DType::Float64;  // arrays
  bool contiguous = true;
  std::vector<int64_t> shape, strides;  // strides in elements, only when not contiguous
  nb::object value;                     // statics
  bool is_float = false;                // numbers: float (else int)
};

// A dynamic number's 0-d array (float64 or int64); null where `object` is not such a number.
nb::object number_array(PyObject* object, bool is_float) {
  if (is_float ? !PyFloat_CheckExact(object) : !PyLong_CheckExact(object)) return nb::object();
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

bool is_number(PyObject* object) {
  return object != nullptr && (PyFloat_CheckExact(object) || PyLong_CheckExact(object));
}

struct Entry {
  std::vector<GuardItem> items;
  // A function with graph breaks on data runs again with tracers on every call (its compiled
  // segments are reused): guards never depend on array contents.
  bool retrace = false;
  // Whether the entry is for arguments that share memory (any_overlap): aliased calls are
  // traced again each time, with the aliasing made explicit; others never match such an entry.
  bool aliased = false;
  std::shared_ptr<Compiled> compiled;  // null: calls run the function eagerly (or retrace)
  nb::object output_spec;
  std::vector<std::pair<int32_t, int32_t>> mutations;  // (array leaf, graph output)
  std::vector<bool> scalar_outputs;  // scalar_only_outputs (never mutated inputs)
};

std::string type_name(PyObject* object) {
  return object == nullptr ? "<undefined>" : Py_TYPE(object)->tp_name;
}

// str() or repr() of an object as UTF-8, for messages ("" if even that fails).
std::string text_of(PyObject* object, bool repr) {
  nb::object text = nb::steal(repr ? PyObject_Repr(object) : PyObject_Str(object));
  const char* utf8 = text ? PyUnicode_AsUTF8(text.ptr()) : nullptr;
  if (utf8 == nullptr) {
    PyErr_Clear();
    return "";
  }
  return utf8;
}

std::string repr_of(PyObject* object) {
  if (object == nullptr) return "<undefined>";
  std::string result = text_of(object, true);
  return result.size() > 60 ? result.substr(0, 57) + "..." : result;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    text += std::to_string(shape[i]) + (shape.size() == 1 || i + 1 < shape.size() ? "," : "");
  return text + ")";
}

bool same_static(PyObject* value, PyObject* expected) {
  if (value == expected) return true;
  if (value == nullptr || expected == nullptr || Py_TYPE(value) != Py_TYPE(expected)) return false;
  int equal = PyObject_RichCompareBool(value, expected, Py_EQ);
  if (equal < 0) {
    PyErr_Clear();
    return false;
  }
  return equal == 1;
}

// One walk of the arguments against one entry's guard. `why`, when given, receives the first
// failed guard in words (only on the slow path: the recompile log).
class Matcher {
 public:
  // Item 0, the call shape, is checked by the caller; the walk starts at item 1.
  // changed: where given, a static number whose value changed (same type) is collected (its
  // leaf index) instead of failing the walk.
  Matcher(const Entry& entry, std::vector<nb::object>& arrays, std::string* why,
          std::vector<size_t>* changed = nullptr)
      : items_(entry.items), arrays_(arrays), why_(why), changed_(changed) {}

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
        if (same_static(object, item.value.ptr())) return true;
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
    }
    return false;
  }

 private:
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
    static const char* kNames[] = {"tuple", "list", "dict", "numpy.ndarray", "", "", ""};
    return fail([&] {
      return "type of " + item.path + " changed from " + kNames[int(item.kind)] + " to " +
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

// Builds a guard from the arguments of the call that was just traced.
class Recorder {
 public:
  // dynamic: leaf indices (flatten order) of numbers that are graph inputs, not statics.
  Recorder(std::vector<GuardItem>& items, const std::vector<size_t>& dynamic)
      : items_(items), dynamic_(dynamic) {}

  void record(PyObject* object, std::string path) {
    GuardItem item;
    item.path = std::move(path);
    const bool container =
        object != nullptr && (PyTuple_CheckExact(object) || PyList_CheckExact(object) ||
                              PyDict_CheckExact(object));
    const bool dynamic = !container && std::find(dynamic_.begin(), dynamic_.end(), leaves_++) !=
                                           dynamic_.end();
    if (dynamic && number_array(object, PyFloat_CheckExact(object)).is_valid()) {
      item.kind = ItemKind::Number;
      item.is_float = PyFloat_CheckExact(object);
      items_.push_back(std::move(item));
    } else if (object == nullptr) {
      item.kind = ItemKind::Absent;
      items_.push_back(std::move(item));
    } else if (PyTuple_CheckExact(object) || PyList_CheckExact(object)) {
      bool tuple = PyTuple_CheckExact(object);
      // A tuple cannot change; a list can while user code runs (repr() of a static), so it
      // is walked over a copy.
      nb::object items = tuple ? nb::borrow(object) : nb::steal(PySequence_Tuple(object));
      if (!items.is_valid()) throw nb::python_error();
      item.kind = tuple ? ItemKind::Tuple : ItemKind::List;
      item.length = PyTuple_GET_SIZE(items.ptr());
      std::string prefix = item.path;
      items_.push_back(std::move(item));
      for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(items.ptr()); ++i)
        record(PyTuple_GET_ITEM(items.ptr(), i), prefix + "[" + std::to_string(i) + "]");
    } else if (PyDict_CheckExact(object)) {
      item.kind = ItemKind::Dict;
      item.length = PyDict_GET_SIZE(object);
      nb::list keys;
      std::vector<std::pair<nb::object, std::string>> children;
      // A snapshot: repr() of a key runs user code, which may change the dict.
      nb::object pairs = nb::steal(PyDict_Items(object));
      if (!pairs.is_valid()) throw nb::python_error();
      for (Py_ssize_t i = 0; i < PyList_GET_SIZE(pairs.ptr()); ++i) {
        PyObject* pair = PyList_GET_ITEM(pairs.ptr(), i);
        keys.append(nb::handle(PyTuple_GET_ITEM(pair, 0)));
        children.emplace_back(nb::borrow(PyTuple_GET_ITEM(pair, 1)),
                              item.path + "[" + repr_of(PyTuple_GET_ITEM(pair, 0)) + "]");
      }
      item.keys = nb::tuple(keys);
      item.length = PyList_GET_SIZE(pairs.ptr());
      items_.push_back(std::move(item));
      for (auto& [value, child_path] : children) record(value.ptr(), child_path);
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
      items_.push_back(std::move(item));
    } else if (PyArray_Check(object)) {
      throw Error(ErrorKind::Unsupported,
                  error_message("compile", "", item.path + " is an ndarray subclass (" +
                                                   type_name(object) + ")"));
    } else {
      item.kind = ItemKind::Static;
      item.value = nb::borrow(object);
      items_.push_back(std::move(item));
    }
  }

 private:
  std::vector<GuardItem>& items_;
  const std::vector<size_t>& dynamic_;
  size_t leaves_ = 0;
};

std::string describe(const GuardItem& item) {
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
  }
  return "";
}

class GuardedCache {
 public:
  // global_reads: (globals dict, name, label) for each global the function, or a helper
  // function it calls, reads; cells: the function's closure cells, named by cell_names.
  GuardedCache(std::vector<std::tuple<nb::dict, std::string, std::string>> global_reads,
               nb::object cells, std::vector<std::string> cell_names)
      : cells_(std::move(cells)), cell_names_(std::move(cell_names)) {
    for (auto& [globals, name, label] : global_reads)
      global_reads_.push_back({std::move(globals), nb::str(name.c_str()), std::move(label)});
  }
  GuardedCache(const GuardedCache&) = delete;
  GuardedCache& operator=(const GuardedCache&) = delete;

  // Safe under re-entry and threads: a guard's __eq__ (user code) may call this function
  // again, or let another thread add an entry. The walk holds its own snapshot of the entry
  // list (add() and clear() install a new list, never change one in place) and strong
  // references to everything it borrowed.
  nb::object call(nb::handle args, nb::handle kwargs) {
    std::shared_ptr<const EntryList> entries = entries_;
    std::vector<nb::object> arrays;
    arrays.reserve(8);
    for (const std::shared_ptr<Entry>& entry : *entries) {
      arrays.clear();
      if (!match_entry(*entry, args, kwargs, arrays, nullptr)) continue;
      if (any_overlap(arrays) != entry->aliased) continue;
      if (entry->retrace) return state().retrace;
      if (!entry->compiled) return state().eager;
      return run_entry(*entry, borrow_all(arrays), arrays);
    }
    return state().miss;
  }

  // The first failed guard of the most recent entry, in words ("" when nothing is cached).
  std::string why_miss(nb::handle args, nb::handle kwargs) {
    std::shared_ptr<const EntryList> entries = entries_;
    if (entries->empty()) return "";
    std::shared_ptr<Entry> entry = entries->back();
    std::vector<nb::object> arrays;
    std::string why;
    if (match_entry(*entry, args, kwargs, arrays, &why) && any_overlap(arrays) != entry->aliased)
      why = entry->aliased ? "the arguments no longer share memory"
                           : "arguments share memory (aliasing)";
    return why.empty() ? "no cached entry matches" : why;
  }

  // The leaves (flatten order) of the numbers whose values differ from the most recent entry's
  // statics, where nothing else differs; None otherwise.
  nb::object changed_numbers(nb::handle args, nb::handle kwargs) {
    std::shared_ptr<const EntryList> entries = entries_;
    if (entries->empty()) return nb::none();
    std::vector<nb::object> arrays;
    std::vector<size_t> changed;
    if (!match_entry(*entries->back(), args, kwargs, arrays, nullptr, &changed) ||
        changed.empty())
      return nb::none();
    return nb::cast(changed);
  }

  // Registers the entry for these arguments; returns its guard in words (KILN_LOGS=guards).
  std::string add(nb::handle args, nb::handle kwargs, std::shared_ptr<Compiled> compiled,
                  nb::object output_spec, std::vector<std::pair<int32_t, int32_t>> mutations,
                  bool retrace, std::vector<size_t> dynamic) {
    auto entry = std::make_shared<Entry>();
    // Item 0: the argument count and keyword names, one comparison on the fast path.
    GuardItem header;
    header.kind = ItemKind::Static;
    header.path = "the call's arguments";
    header.value = call_shape(args, kwargs);
    entry->items.push_back(std::move(header));
    Recorder recorder(entry->items, dynamic);
    record_arguments(recorder, args, kwargs);
    entry->compiled = std::move(compiled);
    entry->output_spec = std::move(output_spec);
    entry->mutations = std::move(mutations);
    entry->retrace = retrace;
    if (entry->compiled) {
      entry->scalar_outputs = scalar_only_outputs(
          entry->output_spec.ptr(), entry->compiled->graph->executable->output_count());
      for (const auto& [leaf, output] : entry->mutations)
        if (size_t(output) < entry->scalar_outputs.size())
          entry->scalar_outputs[size_t(output)] = false;
    }
    std::vector<nb::object> arrays;
    entry->aliased = match_entry(*entry, args, kwargs, arrays, nullptr) && any_overlap(arrays);
    std::string text;
    for (const GuardItem& item : entry->items)
      text += "  " + describe(item) + "\n";
    if (retrace) text += "  (graph breaks or aliasing: traced again on every call)\n";
    if (entry->aliased) text += "  arguments share memory\n";
    auto entries = std::make_shared<EntryList>(*entries_);
    entries->push_back(std::move(entry));
    entries_ = std::move(entries);
    return text;
  }

  // The current values of the globals and closure cells the function reads (None: undefined).
  nb::tuple environment() {
    nb::list values;
    for_each_environment([&](PyObject* value, const std::string&) {
      values.append(value ? nb::handle(value) : nb::none());
    });
    return nb::tuple(values);
  }

  size_t size() const { return entries_->size(); }
  void clear() { entries_ = std::make_shared<EntryList>(); }

  // The cache holds the function's globals, which hold the compiled function, which holds the
  // cache: the garbage collector must see these references to break that cycle.
  int traverse(visitproc visit, void* arg) {
    for (const GlobalRead& read : global_reads_) Py_VISIT(read.globals.ptr());
    Py_VISIT(cells_.ptr());
    for (const auto& entry : *entries_) {
      Py_VISIT(entry->output_spec.ptr());
      for (const GuardItem& item : entry->items) {
        Py_VISIT(item.value.ptr());
        Py_VISIT(item.keys.ptr());
      }
    }
    return 0;
  }
  void release_python_references() {
    entries_ = std::make_shared<EntryList>();
    global_reads_.clear();
    cells_ = nb::none();
    cell_names_.clear();
  }

 private:
  template <class Visit>
  void for_each_environment(Visit visit) {
    // Strong references: a visit may run user code that rebinds the global or the cell.
    for (const GlobalRead& read : global_reads_) {
      PyObject* value = PyDict_GetItemWithError(read.globals.ptr(), read.name.ptr());
      if (value == nullptr && PyErr_Occurred()) PyErr_Clear();
      nb::object held = nb::borrow(value);
      visit(held.ptr(), read.label);
    }
    if (cells_.is_none()) return;
    Py_ssize_t count = PyTuple_GET_SIZE(cells_.ptr());
    for (Py_ssize_t i = 0; i < count; ++i) {
      nb::object held = nb::borrow(PyCell_GET(PyTuple_GET_ITEM(cells_.ptr(), i)));
      visit(held.ptr(), "closure variable '" + cell_names_[size_t(i)] + "'");
    }
  }

  void record_arguments(Recorder& recorder, nb::handle args, nb::handle kwargs) {
    nb::tuple positional = nb::borrow<nb::tuple>(args);
    for (size_t i = 0; i < positional.size(); ++i)
      recorder.record(positional[i].ptr(), "argument " + std::to_string(i));
    if (!kwargs.is_none()) {
      for (auto [key, value] : nb::borrow<nb::dict>(kwargs))
        recorder.record(value.ptr(), "keyword argument '" + text_of(key.ptr(), false) + "'");
    }
    for_each_environment([&](PyObject* value, const std::string& path) {
      recorder.record(value, path);
    });
  }

  // (positional count, keyword names...): cheap to build and compare on the fast path.
  static nb::object call_shape(nb::handle args, nb::handle kwargs) {
    Py_ssize_t keyword_count = kwargs.is_none() ? 0 : PyDict_GET_SIZE(kwargs.ptr());
    if (keyword_count == 0) return nb::steal(PyLong_FromSsize_t(PyTuple_GET_SIZE(args.ptr())));
    nb::list shape;
    shape.append(PyTuple_GET_SIZE(args.ptr()));
    for (auto [key, value] : nb::borrow<nb::dict>(kwargs)) shape.append(key);
    return nb::tuple(shape);
  }

  bool match_entry(const Entry& entry, nb::handle args, nb::handle kwargs,
                   std::vector<nb::object>& arrays, std::string* why,
                   std::vector<size_t>* changed = nullptr) {
    // Item 0 is the call shape: positional count (and keyword names in order).
    Py_ssize_t positional = PyTuple_GET_SIZE(args.ptr());
    Py_ssize_t keyword_count = kwargs.is_none() ? 0 : PyDict_GET_SIZE(kwargs.ptr());
    const GuardItem& header = entry.items[0];
    if (keyword_count == 0) {
      PyObject* expected = header.value.ptr();
      if (!PyLong_CheckExact(expected) || PyLong_AsSsize_t(expected) != positional) {
        if (why) *why = "the number or names of the arguments changed";
        return false;
      }
    } else if (!same_static(call_shape(args, kwargs).ptr(), header.value.ptr())) {
      if (why) *why = "the number or names of the arguments changed";
      return false;
    }
    Matcher matcher(entry, arrays, why, changed);
    for (Py_ssize_t i = 0; i < positional; ++i)
      if (!matcher.match(PyTuple_GET_ITEM(args.ptr(), i))) return false;
    if (keyword_count > 0) {
      Py_ssize_t cursor = 0;
      PyObject *key, *value;
      while (PyDict_Next(kwargs.ptr(), &cursor, &key, &value))
        if (!matcher.match(value)) return false;
    }
    bool matched = true;
    for_each_environment([&](PyObject* value, const std::string&) {
      matched = matched && matcher.match(value);
    });
    return matched;
  }

  static std::vector<Array> borrow_all(const std::vector<nb::object>& arrays) {
    std::vector<Array> inputs;
    inputs.reserve(arrays.size());
    for (const nb::object& array : arrays)
      inputs.push_back(*borrow_array(reinterpret_cast<PyArrayObject*>(array.ptr())));
    return inputs;
  }

  nb::object run_entry(const Entry& entry, const std::vector<Array>& inputs,
                       const std::vector<nb::object>& arrays) {
    return run_graph(*entry.compiled, inputs, arrays, entry.output_spec.ptr(), entry.mutations,
                     &entry.scalar_outputs);
  }

 public:
  // One call of a retraced function (Entry::retrace): its final graph on this call's arrays
  // (the arguments' first, then arrays that entered the trace after a break), with the
  // mutated arguments written back and the output pytree built as for a cached entry.
  // `targets`: the arrays the mutations' leaves name, where they are not `arrays` (a graph
  // break's segment reads some of the call's arrays only).
  static nb::object run_traced(Compiled& compiled, std::vector<nb::object> arrays,
                               nb::object output_spec,
                               std::vector<std::pair<int32_t, int32_t>> mutations,
                               std::optional<std::vector<nb::object>> targets) {
    for (const auto* list : {&arrays, targets ? &*targets : &arrays})
      for (const nb::object& array : *list)
        if (!PyArray_Check(array.ptr()))
          throw Error(ErrorKind::Internal, "kiln: run_traced: an input is not an ndarray");
    return run_graph(compiled, borrow_all(arrays), targets ? *targets : arrays, output_spec.ptr(),
                     mutations);
  }

 private:
  static nb::object run_graph(Compiled& compiled, const std::vector<Array>& inputs,
                              const std::vector<nb::object>& arrays, PyObject* output_spec,
                              const std::vector<std::pair<int32_t, int32_t>>& mutations,
                              const std::vector<bool>* scalar_outputs = nullptr) {
    std::vector<Array> outputs = compiled.run(inputs);
    std::vector<nb::object> results;
    results.reserve(outputs.size());
    for (size_t i = 0; i < outputs.size(); ++i) {
      bool scalar = scalar_outputs != nullptr && i < scalar_outputs->size() &&
                    (*scalar_outputs)[i] && outputs[i].ndim() == 0;
      PyObject* converted = scalar ? to_numpy_scalar(outputs[i]) : to_numpy(std::move(outputs[i]));
      if (converted == nullptr) throw nb::python_error();
      results.push_back(nb::steal(converted));
    }
    for (const auto& [leaf, output] : mutations) {
      if (PyArray_CopyInto(reinterpret_cast<PyArrayObject*>(arrays[size_t(leaf)].ptr()),
                           reinterpret_cast<PyArrayObject*>(results[size_t(output)].ptr())) < 0)
        throw nb::python_error();
    }
    return build_output(output_spec, results);
  }

  struct GlobalRead {
    nb::dict globals;
    nb::str name;
    std::string label;
  };
  std::vector<GlobalRead> global_reads_;
  nb::object cells_;
  std::vector<std::string> cell_names_;
  using EntryList = std::vector<std::shared_ptr<Entry>>;
  std::shared_ptr<const EntryList> entries_ = std::make_shared<EntryList>();
};

int traverse_cache(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  if (!nb::inst_ready(self)) return 0;
  return nb::inst_ptr<GuardedCache>(self)->traverse(visit, arg);
}

int clear_cache(PyObject* self) {
  nb::inst_ptr<GuardedCache>(self)->release_python_references();
  return 0;
}

PyType_Slot cache_slots[] = {{Py_tp_traverse, reinterpret_cast<void*>(traverse_cache)},
                             {Py_tp_clear, reinterpret_cast<void*>(clear_cache)},
                             {0, nullptr}};

}  // namespace

nb::object guarded_call(nb::handle cache, PyObject* args, PyObject* kwargs) {
  return nb::inst_ptr<GuardedCache>(cache)->call(args, kwargs ? nb::handle(kwargs) : nb::none());
}

void bind_guarded_cache(nb::module_& module) {
  nb::class_<GuardedCache>(module, "GuardedCache",
                           "The in-process cache of one compiled function; guards in C++.",
                           nb::type_slots(cache_slots))
      .def(nb::init<std::vector<std::tuple<nb::dict, std::string, std::string>>, nb::object,
                    std::vector<std::string>>(),
           nb::arg("global_reads"), nb::arg("cells").none(), nb::arg("cell_names"))
      .def("call", &GuardedCache::call, nb::arg("args"), nb::arg("kwargs").none(),
           "The outputs of the first entry whose guards hold, kiln._kiln.EAGER for an entry "
           "that runs eagerly, kiln._kiln.MISS when none holds.")
      .def("why_miss", &GuardedCache::why_miss, nb::arg("args"), nb::arg("kwargs").none())
      .def("changed_numbers", &GuardedCache::changed_numbers, nb::arg("args"),
           nb::arg("kwargs").none(),
           "Leaf indices of the Python numbers whose values alone differ from the latest entry.")
      .def("add", &GuardedCache::add, nb::arg("args"), nb::arg("kwargs").none(),
           nb::arg("compiled").none(), nb::arg("output_spec").none(), nb::arg("mutations"),
           nb::arg("retrace") = false, nb::arg("dynamic") = std::vector<size_t>())
      .def_static("run_traced", &GuardedCache::run_traced, nb::arg("compiled"),
                  nb::arg("arrays"), nb::arg("output_spec").none(), nb::arg("mutations"),
                  nb::arg("targets").none() = nb::none())
      .def("environment", &GuardedCache::environment)
      .def("clear", &GuardedCache::clear)
      .def("__len__", &GuardedCache::size);
}

}  // namespace kiln::python
