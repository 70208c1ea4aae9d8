"""Print the lines of a package's modules: all, code, docstrings and comments, blank (issue 28's
line goal).

    python scripts/line_counts.py [DIR] [--without NAME ...]

DIR defaults to src/sampleval/estimation. A docstring line is a line of a module's, class's or
function's docstring; a comment line one that holds only a comment; a blank line one of white
space; code the rest. ``--without`` leaves files out of the second total (``--without audit.py
ranks.py anytime.py compare.py``: the estimators alone). Largest files first.
"""

from __future__ import annotations

import argparse
import ast
import io
import tokenize
from pathlib import Path


def counts(path: Path) -> tuple[int, int, int, int]:
    """(all, code, docstring or comment, blank) lines of one Python file."""
    text = path.read_text()
    lines = text.splitlines()
    doc: set[int] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                doc.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT and lines[token.start[0] - 1].lstrip().startswith("#"):
            doc.add(token.start[0])
    blank = sum(1 for line in lines if not line.strip())
    described = sum(1 for i in doc if lines[i - 1].strip())
    return len(lines), len(lines) - blank - described, described, blank


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", nargs="?", default="src/sampleval/estimation", type=Path)
    parser.add_argument("--without", nargs="*", default=[],
                        help="files (paths below DIR) the second total leaves out")
    args = parser.parse_args()
    rows = {str(p.relative_to(args.dir)): counts(p) for p in sorted(args.dir.rglob("*.py"))}
    print(f"{'all':>6} {'code':>6} {'doc':>6} {'blank':>6}  file")
    for name, row in sorted(rows.items(), key=lambda item: -item[1][0]):
        print(" ".join(f"{n:6d}" for n in row) + f"  {name}")
    total = [sum(column) for column in zip(*rows.values(), strict=True)]
    print(" ".join(f"{n:6d}" for n in total) + "  total")
    if args.without:
        kept = [row for name, row in rows.items() if name not in args.without]
        total = [sum(column) for column in zip(*kept, strict=True)]
        print(" ".join(f"{n:6d}" for n in total) + f"  total without {' '.join(args.without)}")


if __name__ == "__main__":
    main()
