"""The on-disk kernel cache from the command line: `python -m kiln.cache show|verify|clear`.

    show     where the cache is, how many entries, their size and the limit
             ($KILN_CACHE_MAX_BYTES; least recently used entries are evicted past it)
    verify   checks every entry's metadata, checksum and permissions; --remove deletes the
             entries that fail (kiln never loads them: it rebuilds them)
    clear    removes every entry

The work is done by kiln's C++ runtime (src/runtime/cache_maintenance.cpp); the same functions
are reachable from Python as kiln.cache.inspect(), verify() and clear().
"""
import argparse
import os
import sys

from . import _kiln
from ._config import config


def directory():
    """The cache directory in use: kiln.config.cache_dir, $KILN_CACHE_DIR or the default."""
    if config.cache_dir is not None:
        return str(config.cache_dir)
    return _kiln.cache_default_dir()


def inspect(verify=False):
    """A dict: directory, entries (key, path, bytes, last_used, problem), total_bytes, limit."""
    return _kiln.cache_inspect(directory(), verify)


def verify(remove=False):
    """The entries that fail verification (each dict has its `problem`); removed if asked."""
    bad = [entry for entry in inspect(verify=True)["entries"] if entry["problem"]]
    if remove:
        for entry in bad:
            _kiln.cache_remove_entry(entry["path"])
    return bad


def clear():
    """Removes every entry; returns how many there were."""
    return _kiln.cache_clear(directory())


def _size(count):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if count < 1024 or unit == "GiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return str(count)


def main(argv=None):
    try:
        return _command(argv)
    except (ValueError, OSError) as error:  # a bad KILN_CACHE_MAX_BYTES, a refused directory
        print(f"kiln cache: {error}", file=sys.stderr)
        return 2


def _command(argv):
    parser = argparse.ArgumentParser(prog="python -m kiln.cache", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("show", help="location, entries, size and limit")
    verify_parser = commands.add_parser("verify", help="check every entry")
    verify_parser.add_argument("--remove", action="store_true", help="delete the bad entries")
    commands.add_parser("clear", help="remove every entry")
    arguments = parser.parse_args(argv)
    if not directory():
        print("kiln cache: no cache directory (no home directory and no KILN_CACHE_DIR)")
        return 0
    report = inspect()  # (raises for a path that cannot be kiln's cache: relative, a file)
    if not os.path.isdir(directory()):
        print(f"kiln cache: {directory()} does not exist yet (nothing compiled)")
        return 0
    if arguments.command == "show":
        limit = report["limit"]
        print(f"directory: {report['directory']}")
        print(f"entries:   {len(report['entries'])}")
        print(f"size:      {_size(report['total_bytes'])}")
        print(f"limit:     {_size(limit) if limit else 'none'} (KILN_CACHE_MAX_BYTES)")
        return 0
    if arguments.command == "verify":
        bad = verify(remove=arguments.remove)
        for entry in bad:
            print(f"BAD {entry['path']}: {entry['problem']}")
        total = len(inspect()["entries"]) + (len(bad) if arguments.remove else 0)
        print(f"{total - len(bad)} of {total} entries verified"
              + (f", {len(bad)} removed" if arguments.remove and bad else ""))
        return 1 if bad and not arguments.remove else 0
    count = clear()
    print(f"removed {count} entries from {directory()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
