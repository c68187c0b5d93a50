// Whose directory the cache root is. KILN_CACHE_DIR may name a directory that holds the user's
// own files (a project, $HOME): kiln must never build there, nor evict or clear what it finds.
// A root is kiln's when it holds a CACHEDIR.TAG (the standard cache marker,
// https://bford.info/cachedir/), which kiln writes where the root is empty or holds only what
// kiln makes (a cache from before the marker).
#pragma once
#include <string>

namespace kiln::runtime {

// Whether `directory` (which exists) is kiln's cache root, marking it so if it is empty or holds
// only kiln's layout; otherwise false, with `why` saying what is there.
bool claim_cache_root(const std::string& directory, std::string* why = nullptr);

}  // namespace kiln::runtime
