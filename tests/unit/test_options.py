"""The one option vocabulary (issue 28, step 5): every family picks its options from it,
old spellings are read for one release with a FutureWarning and give the very same numbers,
and every result carries its fully resolved estimator name."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import CliResult
from golden import make
from sampleval.core.sample import Sample
from sampleval.declare import Param
from sampleval.errors import UsageError
from sampleval.estimation.estimates import estimate
from sampleval.estimation.family import FAMILIES
from sampleval.estimation.options import (
    RENAMED_OPTIONS,
    RENAMED_VALUES,
    VOCABULARY,
    describe,
    guide,
    pick,
)
from sampleval.estimation.setup import estimator_of
from sampleval.estimation.spec import (
    FAMILY,
    GIVEN,
    TABLE,
    EstimateSpec,
    option_sources,
    parse_estimate,
)

ROOT = Path(__file__).resolve().parents[2]

# (design, old spelling, new spelling): one per renamed option and per renamed value
RENAMED = [
    ("stratified", "R@10~ht(correction=none)", "R@10~ht(bias=none)"),
    ("stratified", "Rprec~ppi(correction=none)", "Rprec~ppi(bias=none)"),
    ("with-replacement", "nDCG~hh(correction=none)", "nDCG~hh(bias=none)"),
    ("stratified", "AP~ht(var=linear)", "AP~ht(variance=linear)"),
    ("stratified", "xinfAP(var=appendix)", "xinfAP(variance=appendix)"),
    ("with-replacement", "P@10~ppi(form=draws)", "P@10~ppi(weights=draws)"),
    ("with-replacement", "AP~ppi(form=design,bias=jackknife)",
     "AP~ppi(weights=by-design,bias=jackknife)"),
    ("with-replacement", "AP~ppi(bias=design,form=ht)", "AP~ppi(bias=by-design,weights=ht)"),
    ("importance", "DCG@10~is(interval=clt)", "DCG@10~is(interval=normal)"),
]


@functools.cache
def collection() -> make.Collection:
    return make.synthetic()


@functools.cache
def sample(design: str) -> Sample:
    made = make.design_sample(collection(), design)
    assert made is not None
    return made


def numbers(design: str, name: str) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = estimate(sample(design), collection().runs, [name], depth=collection().depth,
                       predictions=make.predictions(collection()) if "~ppi" in name else None)
    return out.drop(columns="measure")


def test_every_family_picks_from_the_vocabulary() -> None:
    for family in FAMILIES.values():
        for base in family.bases:
            for param in family.params(base.name):
                option = VOCABULARY[param.name]
                assert set(param.choices) <= set(option.values), (family.name, param.name)
                assert param.default in param.choices
                assert describe(param).startswith(option.about)


def test_a_family_cannot_coin_a_name_or_a_value() -> None:
    with pytest.raises(ValueError, match="not in the vocabulary"):
        pick("correction", ("taylor",), "taylor")
    with pytest.raises(ValueError, match="not among its values"):
        pick("interval", ("normal", "clt"), "normal")
    with pytest.raises(ValueError, match=r"not in sampleval\.estimation\.options\.VOCABULARY"):
        from sampleval.estimation.family import Base, EstimatorFamily

        EstimatorFamily("x", "x", "x", (Base("P", "required", options=("var",)),),
                        ("has_strata",), lambda *a: pd.DataFrame(),
                        options=(Param("var", str, "a", "old"),))


def test_each_name_and_value_means_one_thing() -> None:
    """The renamed spellings are gone from the vocabulary, and each option's value sets,
    across the families, are subsets of one set."""
    assert not set(RENAMED_OPTIONS) & set(VOCABULARY)
    for (option, old), new in RENAMED_VALUES.items():
        assert old not in VOCABULARY[option].values and new in VOCABULARY[option].values
    assert "design" not in VOCABULARY["bias"].values  # by-design; design is a variance


def test_the_renamed_spellings_are_covered() -> None:
    olds = " ".join(old for _, old, _ in RENAMED)
    for name in RENAMED_OPTIONS:
        assert f"{name}=" in olds
    for (option, old), _ in RENAMED_VALUES.items():
        spelled = {v: k for k, v in RENAMED_OPTIONS.items()}.get(option, option)
        assert f"{spelled}={old}" in olds or f"{option}={old}" in olds


@pytest.mark.parametrize(("design", "old", "new"), RENAMED)
def test_an_old_spelling_warns_and_gives_the_same_numbers(design: str, old: str,
                                                          new: str) -> None:
    with pytest.warns(FutureWarning) as caught:
        spec = parse_estimate(old)
    said = " ".join(str(w.message) for w in caught)
    assert "is now spelled" in said
    for part in new[new.index("(") + 1:-1].split(","):
        if part not in old:
            assert part in said  # the message names the new spelling
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert spec == parse_estimate(new)
    pd.testing.assert_frame_equal(numbers(design, old), numbers(design, new))


def test_old_and_new_name_of_one_option_together_is_an_error() -> None:
    with pytest.warns(FutureWarning), pytest.raises(UsageError, match="given twice"):
        parse_estimate("R@10~ht(correction=none,bias=taylor)")


def test_names_are_in_the_vocabulary_order() -> None:
    spec = parse_estimate("AP~ht(interval=normal,variance=linear,ap=paper)")
    assert spec.name == "AP~ht(ap=paper,variance=linear,interval=normal)"
    assert spec.full_name == ("AP~ht(ap=paper,bias=taylor,variance=linear,few=completed,"
                              "interval=normal)")
    assert parse_estimate("R@10~hh").full_name == "R@10~hh(bias=taylor)"
    assert parse_estimate("AP~hh").full_name == (
        "AP~hh(bias=jackknife,few=moment,interval=bias-aware)")
    assert parse_estimate("P@10~ht").full_name == "P@10~ht"


def test_a_measure_has_its_own_values_and_default() -> None:
    """AP~hh's bias defaults to jackknife, R@k~hh's to taylor; R@k takes no jackknife."""
    assert parse_estimate("AP~hh").option("bias") == "jackknife"
    assert parse_estimate("R@10~hh").option("bias") == "taylor"
    with pytest.raises(UsageError, match="must be one of taylor, none"):
        parse_estimate("R@10~ht(bias=jackknife)")


def test_results_carry_the_fully_resolved_name() -> None:
    out = numbers("stratified", "AP~ht(bias=jackknife)")
    assert set(out["estimator"]) == {
        "AP~ht(ap=ours,bias=jackknife,variance=jackknife,few=completed,interval=bias-aware)"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = estimate(sample("stratified"), collection().runs, ["P@10", "AP"],
                         depth=collection().depth)
    resolved = dict(zip(plain["measure"], plain["estimator"], strict=True))
    assert resolved["P@10~ht"] == "P@10~ht"
    assert resolved["AP~ht"].startswith("AP~ht(ap=ours,bias=taylor,")


def test_where_each_value_came_from() -> None:
    design = sample("stratified").design
    spec = estimator_of("AP", design, simple_random=True)
    sources = {k: (v, s) for k, v, s in option_sources("AP", spec)}
    assert sources["bias"] == ("taylor-jackknife", TABLE)
    assert sources["few"] == ("completed", FAMILY)
    asked = "AP~ht(bias=taylor,var=linear)"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spec = parse_estimate(asked)
    sources = {k: (v, s) for k, v, s in option_sources(asked, spec)}
    assert sources["bias"] == ("taylor", GIVEN)  # given, though at its default
    assert sources["variance"] == ("linear", GIVEN)
    assert sources["interval"] == ("bias-aware", FAMILY)


def test_the_options_guide_is_current() -> None:
    """docs/guide/options.md is the vocabulary's: regenerate it with
    ``PYTHONPATH=src python scripts/options_doc.py``."""
    assert (ROOT / "docs" / "guide" / "options.md").read_text() == guide(FAMILIES.values())


def test_an_estimate_spec_reads_old_names_too() -> None:
    with pytest.warns(FutureWarning, match="var=linear is now spelled variance=linear"):
        spec = EstimateSpec("ht", "AP", options=(("var", "linear"),))
    assert spec.option("variance") == "linear"


def test_methods_shows_each_family_options_from_the_vocabulary(
        cli: Callable[..., CliResult]) -> None:
    out = cli("methods")
    assert out.code == 0
    text = " ".join(out.stdout.split())
    for family in FAMILIES.values():
        for line in family.option_lines():
            assert " ".join(f"option {line}".split()) in text
    assert ("option bias (R@k~hh, Rprec~hh, nDCG[@k]~hh): the correction of a ratio "
            "estimate's bias") in text
    assert "none: the ratio as it is (default taylor)" in text
    assert "(default bias-aware); bias-aware is normal with bias=jackknife or none" in text


def test_a_deprecated_value_warns_and_still_computes() -> None:
    """``AP~ht(variance=jackknife-uncorrected)`` is deprecated (issue 28): it warns, naming
    what to use instead, and is still computed; the other values do not warn."""
    with pytest.warns(FutureWarning, match="variance=jackknife-uncorrected is deprecated.*"
                                           "variance=jackknife"):
        spec = EstimateSpec("ht", "AP", options=(("variance", "jackknife-uncorrected"),))
    assert spec.option("variance") == "jackknife-uncorrected"
    with pytest.warns(FutureWarning, match="ap=paper is deprecated.*ap=ours"):
        EstimateSpec("ht", "AP", options=(("ap", "paper"),))
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        EstimateSpec("ht", "AP", options=(("variance", "linear"),))
        EstimateSpec("ht", "AP", options=(("ap", "ours"),))
        EstimateSpec("ppi", "P", 10, options=(("variance", "design"),))


def test_plain_bias_is_each_family_declaration_and_holds_on_every_design() -> None:
    """The table of AP ``bias`` values with which ``interval=bias-aware`` is ``normal``
    (``family.plain_bias()``, read by ``methods`` and ``estimate --explain``) is each
    family's own declaration; and a declared value gives the same interval both ways on
    every golden design the family accepts, while every other ``bias`` value widens the
    interval on at least one (so a wrong declaration fails here)."""
    from conftest import golden_collection, golden_sample
    from sampleval.estimation.family import plain_bias

    assert plain_bias() == {name: f.plain_bias for name, f in FAMILIES.items() if f.plain_bias}
    collection = golden_collection()
    frame = collection.qrels.frame
    predictions = frame[["query_id", "doc_id"]].assign(
        prediction=(frame["relevance"].to_numpy(dtype=np.float64) >= 1) * 0.8 + 0.1)
    checked = []
    for name, family in FAMILIES.items():
        if family.base("AP") is None or not {"bias", "interval"} <= {
                p.name for p in family.params("AP")}:
            continue
        biases = next(p.choices for p in family.options if p.name == "bias")
        widens: dict[str, bool] = dict.fromkeys(biases, False)
        for design in dict.fromkeys(d for d, _ in make.groups()):
            sample = golden_sample(design)
            for bias in biases:
                bounds = []
                for interval in ("bias-aware", "normal"):
                    try:
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            rows = estimate(sample, collection.runs,
                                            [f"AP~{name}(bias={bias},interval={interval})"],
                                            depth=collection.depth,
                                            predictions=predictions
                                            if family.needs_predictions else None)
                    except UsageError:  # the design, or this bias on it, is refused
                        break
                    bounds.append(rows[["lo", "hi"]].to_numpy())
                if len(bounds) < 2:
                    continue
                same = np.array_equal(bounds[0], bounds[1], equal_nan=True)
                assert same or bias not in family.plain_bias, (name, design, bias)
                widens[bias] |= not same
        assert [b for b in biases if not widens[b]] == list(family.plain_bias), name
        checked.append(name)
    assert {"ht", "hh", "ppi"} <= set(checked)
