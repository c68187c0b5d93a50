// GuardedCache: the in-process cache level of one compiled Python function, and its call path.
// A call walks the arguments (args tuple, kwargs dict, then the globals and closure cells the
// function reads) once per cached entry, in C++, comparing each item with the entry's guard:
// containers (exact tuple/list/dict, namedtuple, dataclass: type, length, keys; which values
// are containers the Python driver's pytree spec says), arrays (dtype, shape, layout class:
// C-contiguous or the exact element strides), static values (same type and ==) and dynamic
// numbers (a Python float, or an int that fits int64: a 0-d input of the graph, whatever its
// value; the driver makes a number dynamic once a call changes it, as Dynamo's automatic
// dynamic does); python/guard_items.h. On a hit it borrows the arrays, runs the entry's
// graph-break checks and graph, writes mutated inputs back and rebuilds the output pytree; on a
// miss it returns the MISS sentinel and the Python driver records the guard (record(), before
// the trace: what the trace read), traces, compiles and calls add().
#include <algorithm>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "api/logging.h"
#include "python/aliasing.h"
#include "python/common.h"
#include "python/guard_items.h"
#include "python/output_spec.h"

namespace kiln::python {
namespace {

// A guard recorded before its trace (GuardedCache::record), added with the trace's result.
struct RecordedGuard {
  std::vector<GuardItem> items;
};

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
  uint64_t last_use = 0;  // GuardedCache::uses_ at its latest match (evict_to); under the GIL
};

class GuardedCache {
 public:
  // global_reads: (globals dict, name, label) for each global the function, or a helper
  // function it calls, reads; (object, name, label) for an attribute read with getattr (a
  // __slots__ attribute of self, a function's __defaults__); cells: the function's closure
  // cells, named by cell_names.
  GuardedCache(std::vector<std::tuple<nb::object, std::string, std::string>> global_reads,
               nb::object cells, std::vector<std::string> cell_names)
      : cells_(std::move(cells)), cell_names_(std::move(cell_names)) {
    for (auto& [globals, name, label] : global_reads) {
      const bool code = name == "__code__" && PyFunction_Check(globals.ptr());
      global_reads_.push_back({std::move(globals), nb::str(name.c_str()), std::move(label), code});
    }
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
      // An entry that writes an argument matches only a writeable one: a read-only one is
      // traced again, and the trace raises NumPy's error at the user's line.
      if (!read_only_written(*entry, arrays).empty()) continue;
      entry->last_use = ++uses_;
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
    else if (why.empty())
      why = read_only_written(*entry, arrays);
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

  // The guard of these arguments and the environment as they are now, before the trace that
  // reads them: `spec` is how the driver flattened them (_pytree.flatten_call), `dynamic` the
  // leaves that are dynamic numbers.
  RecordedGuard record(nb::handle args, nb::handle kwargs, nb::handle spec,
                       std::vector<size_t> dynamic, nb::handle reads) {
    RecordedGuard guard;
    // Item 0: the argument count and keyword names, one comparison on the fast path.
    GuardItem header;
    header.kind = ItemKind::Static;
    header.path = "the call's arguments";
    header.value = call_shape(args, kwargs);
    guard.items.push_back(std::move(header));
    Recorder recorder(guard.items, dynamic, reads);
    record_arguments(recorder, args, kwargs, spec);
    return guard;
  }

  // Registers the entry of a recorded guard; returns the guard in words (KILN_LOGS=guards).
  std::string add(const RecordedGuard& guard, nb::handle args, nb::handle kwargs,
                  std::shared_ptr<Compiled> compiled, nb::object output_spec,
                  std::vector<std::pair<int32_t, int32_t>> mutations, bool retrace) {
    auto entry = std::make_shared<Entry>();
    entry->items = guard.items;
    entry->compiled = std::move(compiled);
    entry->output_spec = std::move(output_spec);
    entry->mutations = std::move(mutations);
    entry->retrace = retrace;
    entry->last_use = ++uses_;
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
  // Drops the least recently matched entries (their compiled libraries with them once no call
  // runs them) until at most `most` remain: a function called with ever new shapes keeps
  // bounded memory and guard walks; a dropped entry is a miss, rebuilt from the disk cache.
  void evict_to(size_t most) {
    if (entries_->size() <= most) return;
    auto entries = std::make_shared<EntryList>(*entries_);
    while (entries->size() > most) {
      auto oldest = std::min_element(entries->begin(), entries->end(),
                                     [](const std::shared_ptr<Entry>& a,
                                        const std::shared_ptr<Entry>& b) {
                                       return a->last_use < b->last_use;
                                     });
      entries->erase(oldest);
    }
    entries_ = std::move(entries);
  }

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
        Py_VISIT(item.attributes.ptr());
        Py_VISIT(item.reads.ptr());
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
      nb::object held;
      if (PyDict_Check(read.globals.ptr())) {
        held = nb::borrow(PyDict_GetItemWithError(read.globals.ptr(), read.name.ptr()));
      } else if (read.code) {  // at every call for each function reached: no getattr
        held = nb::borrow(PyFunction_GET_CODE(read.globals.ptr()));
      } else {  // an unset slot reads as an undefined global does
        held = nb::steal(PyObject_GetAttr(read.globals.ptr(), read.name.ptr()));
      }
      if (!held.is_valid() && PyErr_Occurred()) PyErr_Clear();
      visit(held.ptr(), read.label);
    }
    if (cells_.is_none()) return;
    Py_ssize_t count = PyTuple_GET_SIZE(cells_.ptr());
    for (Py_ssize_t i = 0; i < count; ++i) {
      nb::object held = nb::borrow(PyCell_GET(PyTuple_GET_ITEM(cells_.ptr(), i)));
      visit(held.ptr(), "closure variable '" + cell_names_[size_t(i)] + "'");
    }
  }

  // spec: (tuple, [arguments, keyword arguments, environment]) as _pytree.flatten_call makes it.
  void record_arguments(Recorder& recorder, nb::handle args, nb::handle kwargs, nb::handle spec) {
    auto children = [&](Py_ssize_t part) {
      PyObject* node = PyList_GET_ITEM(PyTuple_GET_ITEM(spec.ptr(), 1), part);
      return PyTuple_GET_ITEM(node, PyTuple_GET_SIZE(node) - 1);  // its list of children
    };
    auto check = [](bool same) {
      if (!same) throw Error(ErrorKind::Internal, "kiln: the arguments changed while kiln read them");
    };
    check(PyTuple_Check(spec.ptr()) && PyTuple_GET_SIZE(spec.ptr()) == 2 &&
          PyList_Check(PyTuple_GET_ITEM(spec.ptr(), 1)) &&
          PyList_GET_SIZE(PyTuple_GET_ITEM(spec.ptr(), 1)) == 3);
    PyObject* positional = children(0);
    check(PyList_GET_SIZE(positional) == PyTuple_GET_SIZE(args.ptr()));
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args.ptr()); ++i)
      recorder.record(PyTuple_GET_ITEM(args.ptr(), i), "argument " + std::to_string(i),
                      PyList_GET_ITEM(positional, i));
    PyObject* keywords = children(1);
    Py_ssize_t index = 0;
    if (!kwargs.is_none()) {
      check(PyList_GET_SIZE(keywords) == PyDict_GET_SIZE(kwargs.ptr()));
      for (auto [key, value] : nb::borrow<nb::dict>(kwargs))
        recorder.record(value.ptr(), "keyword argument '" + text_of(key.ptr(), false) + "'",
                        PyList_GET_ITEM(keywords, index++));
    }
    check(index == PyList_GET_SIZE(keywords));
    PyObject* environment = children(2);
    index = 0;
    for_each_environment([&](PyObject* value, const std::string& path) {
      check(index < PyList_GET_SIZE(environment));
      recorder.record(value, path, PyList_GET_ITEM(environment, index++));
    });
    check(index == PyList_GET_SIZE(environment));
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
    Matcher matcher(entry.items, arrays, why, changed);
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
  // Why an argument `entry` writes cannot be written ("" when every one can).
  static std::string read_only_written(const Entry& entry, const std::vector<nb::object>& arrays) {
    for (const auto& [leaf, output] : entry.mutations) {
      auto* array = reinterpret_cast<PyArrayObject*>(arrays[size_t(leaf)].ptr());
      if (!PyArray_ISWRITEABLE(array))
        return "array argument " + std::to_string(leaf) +
               ", which the function writes, is read-only";
    }
    return "";
  }

  static nb::object run_graph(Compiled& compiled, const std::vector<Array>& inputs,
                              const std::vector<nb::object>& arrays, PyObject* output_spec,
                              const std::vector<std::pair<int32_t, int32_t>>& mutations,
                              const std::vector<bool>* scalar_outputs = nullptr) {
    // Every write-back or none: a read-only target found after others were written would
    // leave the caller's arrays half updated by a call that raised.
    for (const auto& [leaf, output] : mutations)
      if (!PyArray_ISWRITEABLE(reinterpret_cast<PyArrayObject*>(arrays[size_t(leaf)].ptr())))
        throw nb::value_error("kiln: assignment destination is read-only (an argument the "
                              "compiled function writes); nothing was written");
    std::vector<Array> outputs = compiled.run(inputs);
    // The new values kiln wrote into the arguments themselves (sched/donated_outputs.h): the
    // argument is the result, nothing to copy.
    std::vector<int32_t> written_into(outputs.size(), -1);
    for (const auto& [leaf, output] : mutations)
      if (outputs[size_t(output)].data() != nullptr &&
          outputs[size_t(output)].data() ==
              PyArray_DATA(reinterpret_cast<PyArrayObject*>(arrays[size_t(leaf)].ptr())))
        written_into[size_t(output)] = leaf;
    std::vector<nb::object> results;
    results.reserve(outputs.size());
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (written_into[i] >= 0) {
        results.push_back(arrays[size_t(written_into[i])]);
        continue;
      }
      bool scalar = scalar_outputs != nullptr && i < scalar_outputs->size() &&
                    (*scalar_outputs)[i] && outputs[i].ndim() == 0;
      PyObject* converted = scalar ? to_numpy_scalar(outputs[i]) : to_numpy(std::move(outputs[i]));
      if (converted == nullptr) throw nb::python_error();
      results.push_back(nb::steal(converted));
    }
    for (const auto& [leaf, output] : mutations) {
      if (written_into[size_t(output)] == leaf) continue;
      if (PyArray_CopyInto(reinterpret_cast<PyArrayObject*>(arrays[size_t(leaf)].ptr()),
                           reinterpret_cast<PyArrayObject*>(results[size_t(output)].ptr())) < 0)
        throw nb::python_error();
    }
    return build_output(output_spec, results, arrays);
  }

  struct GlobalRead {
    nb::object globals;  // a dict read by key, or an object read by getattr
    nb::str name;
    std::string label;
    bool code = false;  // a function's __code__ (python/kiln/_environment.py)
  };
  std::vector<GlobalRead> global_reads_;
  uint64_t uses_ = 0;  // matches so far: each entry's last_use
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

bool is_guarded_cache(nb::handle value) { return nb::isinstance<GuardedCache>(value); }

nb::object guarded_call(nb::handle cache, PyObject* args, PyObject* kwargs) {
  return nb::inst_ptr<GuardedCache>(cache)->call(args, kwargs ? nb::handle(kwargs) : nb::none());
}

void bind_guarded_cache(nb::module_& module) {
  module.def(
      "snapshot_complete",
      [](nb::handle value) {
        bool incomplete = false;
        state_of(value.ptr(), &incomplete);
        return !incomplete;
      },
      nb::arg("value"),
      "Whether a guard's snapshot of this static value copies every mutable container in it "
      "(python/guard_states.h); one too big or too deep is held as itself, and a change made "
      "to it in place would go unseen.");
  nb::class_<RecordedGuard>(module, "RecordedGuard", "A guard recorded before its trace.");
  nb::class_<GuardedCache>(module, "GuardedCache",
                           "The in-process cache of one compiled function; guards in C++.",
                           nb::type_slots(cache_slots))
      .def(nb::init<std::vector<std::tuple<nb::object, std::string, std::string>>, nb::object,
                    std::vector<std::string>>(),
           nb::arg("global_reads"), nb::arg("cells").none(), nb::arg("cell_names"))
      .def("call", &GuardedCache::call, nb::arg("args"), nb::arg("kwargs").none(),
           "The outputs of the first entry whose guards hold, kiln._kiln.EAGER for an entry "
           "that runs eagerly, kiln._kiln.MISS when none holds.")
      .def("why_miss", &GuardedCache::why_miss, nb::arg("args"), nb::arg("kwargs").none())
      .def("changed_numbers", &GuardedCache::changed_numbers, nb::arg("args"),
           nb::arg("kwargs").none(),
           "Leaf indices of the Python numbers whose values alone differ from the latest entry.")
      .def("record", &GuardedCache::record, nb::arg("args"), nb::arg("kwargs").none(),
           nb::arg("spec"), nb::arg("dynamic") = std::vector<size_t>(),
           nb::arg("reads").none() = nb::none(),
           "The guard of these arguments and the environment now, following their pytree spec; "
           "reads: {leaf index: [(holder, name, label)]}, what static arguments read beyond "
           "themselves, read again at each call.")
      .def("add", &GuardedCache::add, nb::arg("guard"), nb::arg("args"), nb::arg("kwargs").none(),
           nb::arg("compiled").none(), nb::arg("output_spec").none(), nb::arg("mutations"),
           nb::arg("retrace") = false)
      .def_static("run_traced", &GuardedCache::run_traced, nb::arg("compiled"),
                  nb::arg("arrays"), nb::arg("output_spec").none(), nb::arg("mutations"),
                  nb::arg("targets").none() = nb::none())
      .def_static(
          "build_output",
          [](nb::object output_spec, std::vector<nb::object> arrays) {
            return build_output(output_spec.ptr(), {}, arrays);
          },
          nb::arg("output_spec"), nb::arg("arrays"),
          "The result an output spec of no graph outputs gives for the call's arrays (its "
          "ArgumentView leaves: the arguments themselves and views of them).")
      .def("environment", &GuardedCache::environment)
      .def("clear", &GuardedCache::clear)
      .def("evict_to", &GuardedCache::evict_to, nb::arg("most"))
      .def("__len__", &GuardedCache::size);
}

}  // namespace kiln::python
