"""Write docs/guide/defaults.md from the defaults table (sampleval.estimation.defaults).

    PYTHONPATH=src python scripts/defaults_doc.py
"""

from __future__ import annotations

from pathlib import Path

from sampleval.estimation.defaults import markdown

TARGET = Path(__file__).resolve().parents[1] / "docs" / "guide" / "defaults.md"

if __name__ == "__main__":
    TARGET.write_text(markdown())
    print(f"wrote {TARGET}")
