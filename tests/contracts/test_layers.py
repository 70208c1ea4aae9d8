"""Selection and estimation do not import each other (DESIGN.md, "The flow"): both read
``core``. A selection method reports its design and records its guarantees in the sample
(``core.design.GUARANTEES``); an estimator reads them there, never from the method. Every
import counts, inside functions too (scripts/import_cycles.py reads them)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
SELECTION = ("sampleval.selection",)
ESTIMATION = ("sampleval.estimation",)


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("import_cycles",
                                                  ROOT / "scripts" / "import_cycles.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _in(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def crossings(src: Path) -> list[str]:
    """``A -> B`` for every import (module-level or in a function) of an estimation module
    by a selection module or the reverse, in the package under ``src``."""
    script = _script()
    known = script.modules(src)
    out = []
    for name, path in known.items():
        for sides in ((SELECTION, ESTIMATION), (ESTIMATION, SELECTION)):
            if _in(name, sides[0]):
                out += [f"{name} -> {dep}" for dep in
                        sorted(script.imports(name, path, known, True)) if _in(dep, sides[1])]
    return sorted(out)


def test_selection_and_estimation_do_not_import_each_other() -> None:
    assert crossings(ROOT / "src") == []


def test_a_function_level_import_counts(tmp_path: Path) -> None:
    for name, text in {"__init__.py": "", "selection/__init__.py": "",
                       "selection/m.py": "def f():\n    from sampleval.estimation import x\n",
                       "estimation/__init__.py": "", "estimation/x.py": "",
                       "estimation/y.py": "from ..selection import m\n"}.items():
        path = tmp_path / "sampleval" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert crossings(tmp_path) == ["sampleval.estimation.y -> sampleval.selection.m",
                                   "sampleval.selection.m -> sampleval.estimation.x"]


@pytest.mark.parametrize("package", ["sampleval.selection", "sampleval.estimation"])
def test_the_packages_exist(package: str) -> None:
    """The check reads the packages it names (a rename must update it)."""
    assert _in(package, SELECTION + ESTIMATION)
    assert package in _script().modules(ROOT / "src")
