"""The defaults table (:mod:`sampleval.estimation.defaults`, issue 28 step 4): its every entry
names an estimator that exists and accepts its design; registering a family changes no
default; ``sampleval methods --defaults`` prints it; ``docs/guide/defaults.md`` is current.

That the table gives exactly the defaults of before (the families' integer preference sums)
was checked by this file's first version, against the old ``estimator_for``, for every
design x measure x reach, in the commit that added the table."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import CliResult
from sampleval.core.sample import DESIGNS
from sampleval.estimation.defaults import (
    CUTOFF,
    DEFAULTS,
    REACHING,
    SIMPLE_RANDOM,
    markdown,
    measure_key,
    rows,
)
from sampleval.estimation.family import FAMILIES
from sampleval.estimation.spec import estimator_for, parse_estimate

ROOT = Path(__file__).resolve().parents[2]
ENTRIES = [(d, m, e, False, False) for d, t in DEFAULTS.items() for m, e in t.items()] + [
    (d, m, e, True, False) for d, t in REACHING.items() for m, e in t.items()] + [
    (d, m, e, False, True) for d, t in SIMPLE_RANDOM.items() for m, e in t.items()]

NEW_FAMILY = '''"""A copy of the Horvitz-Thompson family under a name that sorts first."""

from dataclasses import replace

from sampleval.estimation.family import FAMILIES, register_family

register_family(replace(FAMILIES["ht"], name="aaa"))
'''


def every_question() -> dict[tuple[str, str, int | None, bool], str | None]:
    """``estimator_for``'s answer for every design x declared base x cutoff x reach."""
    bases = sorted({b.name for f in FAMILIES.values() for b in f.bases})
    answers = {}
    for design in DESIGNS:
        for base in bases:
            for cutoff in (None, 10):
                for reach in (False, True):
                    spec = estimator_for(base, cutoff, design, reach)
                    answers[design, base, cutoff, reach] = None if spec is None else spec.name
    return answers


@pytest.mark.parametrize(("design", "measure", "name", "reach", "simple"), ENTRIES)
def test_every_entry_exists_and_accepts_its_design(design: str, measure: str, name: str,
                                                   reach: bool, simple: bool) -> None:
    cutoff = 10 if CUTOFF in measure else None
    spec = parse_estimate(name.replace(CUTOFF, "@10"))
    family = FAMILIES[spec.family]
    assert design in DESIGNS and design in family.designs
    assert family.estimates(spec.base, spec.cutoff, design)
    assert not family.needs_predictions  # a plain measure brings none
    assert measure_key(spec.base, spec.cutoff) == measure
    assert spec.options == () or simple  # the simple-random variant names its bias option
    assert estimator_for(spec.base, cutoff, design, reach, simple) == spec


def test_every_sampled_design_has_defaults() -> None:
    assert set(DEFAULTS) == set(DESIGNS) - {"pooled"}
    for variant in (REACHING, SIMPLE_RANDOM):
        assert set(variant) <= set(DEFAULTS)
        for design, table in variant.items():
            assert set(table) <= set(DEFAULTS[design])
            assert all(DEFAULTS[design][m] != e for m, e in table.items())


def test_registering_a_family_changes_no_default(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A copy of ``~ht`` named ``aaa`` (the tie-break by name once made it the default AP and
    P@k of every stratified sample) is estimable and nobody's default."""
    before = every_question()
    (tmp_path / "aaa_family.py").write_text(NEW_FAMILY)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        importlib.import_module("aaa_family")
        assert "aaa" in FAMILIES
        assert parse_estimate("AP~aaa").family == "aaa"
        assert every_question() == before
    finally:
        FAMILIES._items.pop("aaa", None)
        sys.modules.pop("aaa_family", None)


def test_methods_prints_the_table(cli: Callable[..., CliResult]) -> None:
    tsv = cli("methods", "--defaults", "-f", "tsv")
    assert tsv.code == 0
    lines = tsv.stdout.splitlines()
    assert lines[0] == "design\tmeasure\testimator"
    assert [tuple(line.split("\t")) for line in lines[1:]] == rows()
    table = cli("methods", "--defaults")
    assert table.code == 0 and len(table.stdout.splitlines()) == len(lines)
    assert table.stdout.split()[:6] == ["design", "measure", "estimator", *rows()[0]]


def test_docs_are_current() -> None:
    """docs/guide/defaults.md is the table's: regenerate it with
    ``PYTHONPATH=src python scripts/defaults_doc.py``."""
    assert (ROOT / "docs" / "guide" / "defaults.md").read_text() == markdown()
