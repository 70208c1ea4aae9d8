"""scripts/import_cycles.py, the check of issue 28's step 9, finds the cycles it should."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "import_cycles.py"


def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("import_cycles", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def package(root: Path, files: dict[str, str]) -> Path:
    for name, text in {"sampleval/__init__.py": "", **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_finds_deferred_and_relative_cycles(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    src = package(tmp_path, {
        "sampleval/a.py": "from sampleval.b import f\n",
        "sampleval/b.py": "def f():\n    from . import a\n",
        "sampleval/sub/__init__.py": "from .c import g\n",
        "sampleval/sub/c.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                               "    from sampleval.sub import g\n"),
    })
    cycles = script()
    assert cycles.main([str(src)]) == 1
    out = capsys.readouterr().out
    assert "cycle (2 modules): sampleval.a, sampleval.b" in out
    assert "sub" not in out  # an import for type checking only is no cycle
    assert cycles.main([str(src), "--module-level"]) == 0
