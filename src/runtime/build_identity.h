// Which build of kiln this is: its version and the GNU build-id of the loaded libkiln (a hash
// of the linked binary, changed by any change to kiln's code). Part of every cache key, since
// a disk hit skips scheduling and emission: a binary made by another build of the scheduler
// or emitter must never be loaded, even when the version string is the same.
#pragma once
#include <string>

namespace kiln::runtime {

const std::string& build_identity();

}  // namespace kiln::runtime
