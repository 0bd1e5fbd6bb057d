#!/usr/bin/python3
"""Checks the structure rules of the C sources that a reader relies on and a compiler
does not: no function body longer than 80 lines, and the shared header src/inbox.h
holding only the terms, SQLSTATEs and limits every module needs (types and
declarations belong to the module that owns them).

Functions are found the way the sources are written (pgindent style): a body opens
with "{" alone in column 0 after the function's header and closes with "}" alone in
column 0.  Prints TAP: one "ok" or "not ok" per rule, each failure followed by what
was wrong, and exits 1 when any failed.

    python3 test/package/structure.py [REPOSITORY_ROOT]
"""

import glob
import os
import re
import sys

from meta import Checker  # the TAP report of the package checks

MAX_FUNCTION_LINES = 80
# What inbox.h may include: the server's own base headers.
SHARED_INCLUDES = {"postgres.h", "fmgr.h"}


def functions(path):
    """(name, first line, number of lines) of each function body in a C file."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    found = []
    i = 0
    while i < len(lines):
        if lines[i] == "{":
            header = lines[i - 1] if i > 0 else ""
            # A header ends with ")" (a function) and not with "=" (an initializer).
            j = i - 1
            while j > 0 and not re.search(r"\w+\s*\(", lines[j]) and lines[j - 1]:
                j -= 1
            name = re.search(r"(\w+)\s*\(", lines[j])
            end = i + 1
            while end < len(lines) and not lines[end].startswith("}"):
                end += 1
            if header.rstrip().endswith(")") and name:
                found.append((name.group(1), i + 1, end - i + 1))
            i = end
        i += 1
    return found


def long_functions(root):
    problems = []
    for path in sorted(glob.glob(os.path.join(root, "src", "*.c"))):
        for name, line, length in functions(path):
            if length > MAX_FUNCTION_LINES:
                problems.append(f"{os.path.relpath(path, root)}:{line}: {name} is {length} lines")
    return problems


def shared_header(root):
    path = os.path.join(root, "src", "inbox.h")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    code = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    problems = []
    for include in re.findall(r'#include\s+[<"]([^>"]+)[>"]', code):
        if include not in SHARED_INCLUDES:
            problems.append(f"src/inbox.h includes {include}")
    for kind in re.findall(r"\b(typedef|struct|enum|union|extern)\b", code):
        problems.append(f"src/inbox.h declares with '{kind}': that belongs in a module's header")
    return problems


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    c = Checker()
    c.check(f"no function in src/ is longer than {MAX_FUNCTION_LINES} lines", long_functions(root))
    c.check("src/inbox.h holds only shared terms, SQLSTATEs and limits", shared_header(root))
    return 1 if c.report() else 0


if __name__ == "__main__":
    sys.exit(main())
