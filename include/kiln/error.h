// kiln::Error: every user-facing failure. It carries the op and the user's source location
// where known, so a message reads "kiln: add at model.cpp:12: shapes (3,4) and (5,) ...".
#pragma once
#include <stdexcept>
#include <string>

namespace kiln {

enum class ErrorKind {
  Value,        // bad shapes, bad arguments (Python ValueError)
  Type,         // bad dtypes (Python TypeError)
  Axis,         // axis out of range (numpy AxisError)
  Index,        // an index out of bounds, found while running (Python IndexError)
  Memory,       // a size that overflows int64 or an allocation that fails (MemoryError)
  Overflow,     // a value that does not fit the destination dtype (OverflowError)
  Permission,   // an unsafe cache directory or file, refused (PermissionError)
  Unsupported,  // an op or feature kiln does not handle
  Toolchain,    // the C++ compiler failed; the message names the generated file
  Internal,     // kiln's own bug: names the pass
  // What eager torch raises as RuntimeError (gather's index out of bounds). Last: records
  // on disk (the torch front end's warm start) hold kinds by number.
  Runtime,
  // An index out of bounds where eager torch raises IndexError or RuntimeError by the
  // tensor's layout (index_select): an exception that is both.
  IndexOrRuntime,
  // A division by zero NumPy's Python code raises as ZeroDivisionError (np.average's weights
  // that sum to zero), found while running.
  ZeroDivision,
  // np.linalg's error for a singular matrix, found while running (numpy.linalg.LinAlgError, a
  // ValueError: a user's `except np.linalg.LinAlgError` must catch it).
  LinAlg,
  // A compile ended because the user interrupted it (Ctrl-C while the C++ compiler ran): the
  // Python front end raises the KeyboardInterrupt its signal handler made.
  Interrupted,
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

// Builds "op at location: message" (location may be empty).
std::string error_message(const std::string& op, const std::string& location,
                          const std::string& message);

}  // namespace kiln
