#!/usr/bin/env python3
"""Prints which top-level module of src/ uses which (`crate::<module>` paths in non-test code, comments
and doc links left out), and fails (exit 1) when two modules use each other, directly or through others.

Usage: python3 scripts/module_graph.py [SRC_DIR]   (default: src)

The same check runs under `cargo test` (src/module_graph_tests.rs).
"""

import re
import sys
from pathlib import Path


def product_text(path: Path) -> str:
    """The file's code without comments and without its `#[cfg(test)]` items."""
    lines = []
    skip_depth = None
    pending_test = False
    depth = 0
    for line in path.read_text(encoding="utf-8").splitlines():
        stripped = line.strip()
        if stripped.startswith("//"):
            continue
        if skip_depth is None and stripped.startswith("#[cfg(test)]"):
            pending_test = True
            continue
        opens, closes = line.count("{"), line.count("}")
        if pending_test:
            pending_test = False
            if stripped.endswith(";"):
                continue  # `mod tests;`
            skip_depth = depth
        depth += opens - closes
        if skip_depth is not None:
            if depth <= skip_depth:
                skip_depth = None
            continue
        lines.append(line.split("//")[0])
    return "\n".join(lines)


def graph(src: Path) -> dict:
    modules = {}
    for entry in sorted(src.iterdir()):
        name = entry.stem
        if name in ("main", "lib") or name.endswith("tests") or name == "test_support":
            continue
        files = [entry] if entry.is_file() else sorted(entry.rglob("*.rs"))
        files = [f for f in files if not f.stem.endswith("tests")]
        uses = set()
        for f in files:
            uses.update(re.findall(r"crate::([a-z_0-9]+)", product_text(f)))
        uses.discard(name)
        modules[name] = uses
    for name in modules:
        modules[name] &= set(modules)
    return modules


def cycles(modules: dict) -> list:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(modules[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(modules):
        if v not in index:
            visit(v)
    return found


def main() -> int:
    src = Path(sys.argv[1] if len(sys.argv) > 1 else "src")
    modules = graph(src)
    for name in sorted(modules, key=lambda n: (len(modules[n]), n)):
        uses = ", ".join(sorted(modules[name])) or "-"
        print(f"{name:<12} -> {uses}")
    found = cycles(modules)
    for component in found:
        print("cycle: " + " <-> ".join(component), file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
