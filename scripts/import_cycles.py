"""Print the import cycles among sampleval's modules (issue 28, step 9's check).

    python scripts/import_cycles.py [--module-level] [SRC]

Reads every module under SRC/sampleval (default: src) with ``ast``: an edge A -> B for each
``import``/``from ... import`` of a sampleval module B in A, inside functions too (a deferred
import still ties the two modules together; ``--module-level`` counts only the imports run at
import time), never under ``if TYPE_CHECKING:``. ``from P import name`` counts as an
import of ``P.name`` when that is a module, else of ``P``; a package's ``__init__`` is the
package. Prints each strongly connected component of more than one module (a cycle, or
several entangled), and exits 1 when there is one.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

PACKAGE = "sampleval"


def modules(src: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package."""
    out = {}
    for path in sorted((src / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports(name: str, path: Path, known: dict[str, Path], deferred: bool) -> set[str]:
    """The package's modules ``name`` imports (see the module docstring)."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()

    def target(module: str, names: list[str]) -> None:
        for alias in names:
            if f"{module}.{alias}" in known:
                found.add(f"{module}.{alias}")
            elif module in known:
                found.add(module)

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and _type_checking(node):
                visit(node.orelse)
                continue
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name in known)
            elif isinstance(node, ast.ImportFrom):
                module = node.module or ""
                if node.level:
                    base = name.split(".")
                    base = base if is_package else base[:-1]
                    base = base[:len(base) - node.level + 1]
                    module = ".".join([*base, module] if module else base)
                if module.split(".")[0] == PACKAGE:
                    target(module, [a.name for a in node.names])
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if deferred:
                    visit(node.body)
                continue
            for field in ("body", "orelse", "finalbody", "handlers"):
                inner = getattr(node, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.AST):
                    visit([n for n in inner if isinstance(n, ast.stmt)] if field != "handlers"
                          else [s for h in inner for s in h.body])

    visit(ast.parse(path.read_text()).body)
    found.discard(name)
    return found


def components(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one module, largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                out.append(sorted(part))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            strong(v)
    return sorted(out, key=lambda p: (-len(p), p))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("src", nargs="?", default="src", type=Path)
    parser.add_argument("--module-level", action="store_true",
                        help="count only the imports run at import time (not those inside "
                             "functions)")
    args = parser.parse_args(argv)
    known = modules(args.src)
    deferred = not args.module_level
    graph = {n: imports(n, p, known, deferred) & set(known) for n, p in known.items()}
    found = components(graph)
    for part in found:
        print(f"cycle ({len(part)} modules): {', '.join(part)}")
    kind = "module-level and deferred" if deferred else "module-level"
    print(f"{len(found)} import cycles ({kind} imports) among {len(known)} modules")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
