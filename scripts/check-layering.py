#!/usr/bin/python3
"""Checks design.md §2: a layer includes only itself and the layers before it in

    core < config < kv < attention < backends < runner < engine < tools

Usage: scripts/check-layering.py [ROOT]   (ROOT defaults to the repository holding this script)

One pass over every C++ source and header under include/, src/, tools/, python/, bench/ and fuzz/.
A file's layer is its folder: include/attnrt/<layer>/ and src/<layer>/ are that layer; tools/,
python/, bench/ and fuzz/ are the top (they may include anything, nothing in include/ or src/ may
include them). attnrt/version.h stands below every layer (anyone may include it, it includes no
layer); the umbrella attnrt/attnrt.h stands above the library layers, and no file of include/ or
src/ includes it.

An include ("..." or <...>) is resolved as the compiler would find it in this tree: first relative
to the including file's folder (quoted form only), then against include/ (the public form
"attnrt/<layer>/..."), then against src/ (the internal form "<layer>/..."), then against the top
folders' include directories. `#define HWY_TARGET_INCLUDE "..."` (Highway's re-include, relative
to include/) counts as an include too. An include that names a layer ("attnrt/<layer>/..." or, in
quotes, "<layer>/...") but resolves to no file is still ranked by that name; any other include
that resolves to nothing in the tree (the standard library, fmt, hwy, ...) is not ranked.

Second rule: the public headers (include/attnrt/) include no <fmt/...>, no more of nlohmann's JSON
than its forward declarations (<nlohmann/json_fwd.hpp>), and no header of src/.

Prints one line per violation and a summary line; exits 1 if there is any violation, else 0.
"""

import os
import posixpath
import re
import sys

LAYERS = ("core", "config", "kv", "attention", "backends", "runner", "engine", "tools")
RANK = {name: i for i, name in enumerate(LAYERS)}
TOP_RANK = RANK["tools"]
LIBRARY_TOP_RANK = RANK["engine"]
TOP_FOLDERS = ("tools", "python", "bench", "fuzz")
SCANNED = ("include", "src") + TOP_FOLDERS
SOURCE_SUFFIXES = (".h", ".hh", ".hpp", ".hxx", ".inc", ".ipp", ".c", ".cc", ".cpp", ".cxx")
# Where the top folders' own headers are found by name (their targets' include directories, and
# the root for "tools/attnrt/..."-style paths), after include/ and src/.
TOP_INCLUDE_DIRS = ("tools", "tools/attnrt", "python/src", "bench", "fuzz", "")
VERSION_H = "include/attnrt/version.h"
UMBRELLA_H = "include/attnrt/attnrt.h"

INCLUDE_RE = re.compile(
    r'^[ \t]*#[ \t]*(?:include[ \t]*(?:"([^"\n]+)"|<([^>\n]+)>)'
    r'|define[ \t]+HWY_TARGET_INCLUDE[ \t]+"([^"\n]+)")',
    re.MULTILINE,
)


class Where:
    """Where a file stands: a label for messages and a rank (None: outside the ranking)."""

    __slots__ = ("label", "rank")

    def __init__(self, label, rank):
        self.label = label
        self.rank = rank


def classify(path):
    """The layer of a file of the tree, by its folder (path relative to the root, '/'-separated)."""
    parts = path.split("/")
    top = parts[0]
    if top in TOP_FOLDERS:
        return Where(top if top == "tools" else top + ", top", TOP_RANK)
    if path == VERSION_H:
        return Where("attnrt/version.h", -1)
    if path == UMBRELLA_H:
        return Where("umbrella attnrt/attnrt.h", LIBRARY_TOP_RANK)
    if top == "include" and len(parts) >= 4 and parts[1] == "attnrt" and parts[2] in RANK:
        return Where(parts[2], RANK[parts[2]])
    if top == "src" and len(parts) >= 3 and parts[1] in RANK:
        return Where(parts[1], RANK[parts[1]])
    return None


def library_layer(name):
    return name in RANK and name != "tools"


def main(argv):
    if len(argv) > 2:
        sys.stderr.write("usage: check-layering.py [ROOT]\n")
        return 2
    here = os.path.dirname(os.path.abspath(__file__))
    root = argv[1] if len(argv) == 2 else os.path.dirname(here)

    # Every file of the scanned folders (to resolve includes without touching the disk again), and
    # the C++ files among them.
    tree = set()
    sources = []
    for folder in SCANNED:
        base = os.path.join(root, folder)
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = [d for d in dirnames if not d.startswith(".") and d != "__pycache__"]
            rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
            for name in filenames:
                rel = rel_dir + "/" + name
                tree.add(rel)
                if name.endswith(SOURCE_SUFFIXES):
                    sources.append(rel)
    sources.sort()

    def resolve(including_dir, written, quoted, hwy):
        """The tree path an include names, or None when it lies outside the tree."""
        candidates = []
        if hwy:
            candidates.append("include/" + written)
        else:
            if quoted:
                candidates.append(including_dir + "/" + written)
            candidates.append("include/" + written)
            candidates.append("src/" + written)
            candidates.extend((d + "/" if d else "") + written for d in TOP_INCLUDE_DIRS)
        for candidate in candidates:
            candidate = posixpath.normpath(candidate)
            if candidate in tree:
                return candidate
        return None

    def rank_of(written, target, quoted):
        """Where the included file stands, or None for what the layering does not rank."""
        if target is not None:
            return classify(target)
        parts = written.split("/")
        if len(parts) >= 3 and parts[0] == "attnrt" and library_layer(parts[1]):
            return Where(parts[1], RANK[parts[1]])
        if quoted and len(parts) >= 2 and library_layer(parts[0]):
            return Where(parts[0], RANK[parts[0]])
        return None

    violations = []
    include_count = 0
    for path in sources:
        try:
            with open(os.path.join(root, path), encoding="utf-8", errors="replace") as handle:
                text = handle.read()
        except OSError as error:
            violations.append(f"layering: {path}: cannot read ({error.strerror})")
            continue
        where = classify(path)
        library_file = path.startswith(("include/", "src/"))
        public_header = path.startswith("include/attnrt/")
        if library_file and where is None:
            violations.append(
                f"layering: {path}: outside the layers (a library file belongs in "
                "include/attnrt/<layer>/ or src/<layer>/)"
            )
            continue
        including_dir = posixpath.dirname(path)
        line = 1
        last = 0
        for match in INCLUDE_RE.finditer(text):
            line += text.count("\n", last, match.start())
            last = match.start()
            quoted_path, angle_path, hwy_path = match.groups()
            written = quoted_path or angle_path or hwy_path
            quoted = angle_path is None
            include_count += 1
            target = resolve(including_dir, written, quoted, hwy_path is not None)
            shown = f'"{written}"' if quoted else f"<{written}>"

            if public_header:
                if written.startswith("fmt/"):
                    violations.append(
                        f"layering: {path}:{line}: public header includes {shown} "
                        "(fmt stays out of include/)"
                    )
                elif written == "nlohmann/json.hpp":
                    violations.append(
                        f"layering: {path}:{line}: public header includes {shown} "
                        "(only nlohmann/json_fwd.hpp belongs in include/)"
                    )
                elif (target is not None and target.startswith("src/")) or (
                    target is None and quoted and library_layer(written.split("/")[0])
                    and "/" in written
                ):
                    violations.append(
                        f"layering: {path}:{line}: public header includes {shown} "
                        f"(internal: {target or 'src/' + written})"
                    )

            if not library_file:
                continue  # the top folders may include anything
            included = rank_of(written, target, quoted)
            if included is None or target == path:
                continue
            if target == UMBRELLA_H:
                bad = path != UMBRELLA_H
            else:
                bad = included.rank > where.rank
            if bad:
                violations.append(
                    f"layering: {path}:{line}: {where.label} includes {shown} ({included.label})"
                )

    for violation in violations:
        print(violation)
    print(
        f"layering: {len(sources)} files and {include_count} includes checked, "
        f"{len(violations)} violation{'s' if len(violations) != 1 else ''}"
    )
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
