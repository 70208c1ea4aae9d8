"""Write docs/guide/options.md from the option vocabulary (sampleval.estimation.options) and
the registered families' picks.

    PYTHONPATH=src python scripts/options_doc.py
"""

from __future__ import annotations

from pathlib import Path

from sampleval.estimation.family import FAMILIES
from sampleval.estimation.options import guide

TARGET = Path(__file__).resolve().parents[1] / "docs" / "guide" / "options.md"

if __name__ == "__main__":
    TARGET.write_text(guide(FAMILIES.values()))
    print(f"wrote {TARGET}")
