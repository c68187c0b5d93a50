#!/usr/bin/env bash
# pytest-xdist's options for the test scripts: one worker per core, at most 4 (each imports
# torch), whole files per worker so that a file's module-level set-up runs once. Every test has
# its own kernel cache (tests/python/conftest.py), so workers never share one.
cores="$(nproc)"
echo "-n $(( cores < 4 ? cores : 4 )) --dist loadfile"
