#!/usr/bin/python3
"""Print the .cc files of a list that need clang-tidy after a change: those whose own text differs
from git revision BASE, and for each changed header one file that includes it (the build's ninja
deps; its own .cc when there is one), through which clang-tidy reports the header's code. A
header included everywhere (engine_config.h) thus costs one file, not the whole tree.

usage: tidy_files_needing_lint.py BUILD_DIR BASE < files (absolute paths, one per line)
Every file is printed when .clang-tidy itself changed, or when a file has no recorded deps."""
import json
import os
import subprocess
import sys


def changed_paths(base):
    out = subprocess.run(["git", "diff", "--name-only", base, "--"], check=True,
                         capture_output=True, text=True).stdout
    root = subprocess.run(["git", "rev-parse", "--show-toplevel"], check=True,
                          capture_output=True, text=True).stdout.strip()
    return {os.path.join(root, line) for line in out.splitlines() if line}


def deps_of_objects(build):
    """object path (relative to build) -> set of absolute dependency paths, from `ninja -t deps`."""
    out = subprocess.run(["ninja", "-C", build, "-t", "deps"], check=True, capture_output=True,
                         text=True).stdout
    deps, current = {}, None
    for line in out.splitlines():
        if not line.strip():
            continue
        if not line.startswith(" "):
            current = deps.setdefault(line.split(":", 1)[0], set())
        elif current is not None:
            current.add(os.path.normpath(os.path.join(build, line.strip())))
    return deps


def object_of(entry):
    words = entry["command"].split()
    return words[words.index("-o") + 1] if "-o" in words else None


def main():
    build, base = sys.argv[1], sys.argv[2]
    files = [line.strip() for line in sys.stdin if line.strip()]
    changed = changed_paths(base)
    if any(path.endswith("/.clang-tidy") for path in changed):
        print("\n".join(files))
        return
    with open(os.path.join(build, "compile_commands.json")) as f:
        objects = {os.path.normpath(e["file"]): object_of(e) for e in json.load(f)}
    deps = deps_of_objects(build)
    chosen = []
    headers = {}  # changed header -> the files that include it
    for path in files:
        recorded = deps.get(objects.get(os.path.normpath(path)) or "")
        if path in changed or not recorded:
            chosen.append(path)
            continue
        for header in recorded & changed:
            headers.setdefault(header, []).append(path)
    for header, includers in sorted(headers.items()):
        if any(path in chosen for path in includers):
            continue  # a file already linted reports this header
        stem = os.path.splitext(os.path.basename(header))[0]
        own = [path for path in includers if os.path.splitext(os.path.basename(path))[0] == stem]
        chosen.append((own or sorted(includers))[0])
    picked = set(chosen)
    for path in files:
        if path in picked:
            print(path)


if __name__ == "__main__":
    main()
