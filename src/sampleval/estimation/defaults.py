"""Which estimator a plain measure (``AP``, ``P@10``) gets on a sample of each design: one
table, the only source of defaults (:func:`sampleval.estimation.spec.estimator_for` reads
it; ``sampleval methods --defaults`` prints it; ``docs/guide/defaults.md`` is generated from
it by ``python scripts/defaults_doc.py``).

Registering an estimator family changes no default: making it a default is an edit of this
table, with a line in CHANGELOG.md. A measure with a cutoff is keyed ``BASE@k`` (any k); a
(design, measure) not listed has no default estimator (``pooled`` samples, which are evaluated
exactly, have none).

Why these (chosen by the accuracy measured with ``python -m
studies.default_estimates``, and for AP on stratified samples by the coverage of
the intervals):

- census and stratified: the Horvitz-Thompson family ``~ht``; AP too, whose intervals cover
  better than xinfAP's (:mod:`sampleval.estimation.families.inferred`, "Not the default AP
  estimator"); nDCG without a cutoff by NIST's infNDCG (exact on a census); NumRelRet by
  ``NumRelRet~ht`` too, not NIST's inum_rel_ret, whose smoothing constants make a census
  miss the count (875.999 for 876) and which gives no interval;
- poisson and inclusion: ``~ht``; AP on inclusion-only samples (prels) by statAP;
- with-replacement: the per-draw family ``~hh`` for the ratios (AP, R@k, Rprec), NumRel and
  NumRelRet (whose ``~ht`` is biased low there and its intervals covered 0.68-0.78:
  ``python -m studies.numrelret_defaults``, docs/research/estimating.md),
  ``~ht`` (lower rms) for P@k, DCG and nDCG, except on samples whose every draw could reach
  every document (:data:`REACHING`), where ``~hh`` is unbiased for them too
  (:mod:`sampleval.estimation.families.hh`, "Defaults");
- importance: ``~is`` (Schnabel et al.) for what it estimates, ``~hh`` for the rest
  (NumRel, NumRelRet too);
- AP on a stratified sample that its method made one simple random sample per topic
  (``uniform``, infAP's design: :data:`SIMPLE_RANDOM`): ``AP~ht(bias=taylor-jackknife)``, which removes
  the bias the Taylor correction leaves where few relevant documents are judged (issue 29;
  docs/research/calibration.md, section 2).
"""

from __future__ import annotations

CUTOFF = "@k"
"""How a measure with a cutoff is written in the table (``P@k``: P at any cutoff)."""

DEFAULTS: dict[str, dict[str, str]] = {
    "census": {"AP": "AP~ht", "AP@k": "AP@k~ht", "P@k": "P@k~ht", "R@k": "R@k~ht",
        "Rprec": "Rprec~ht", "nDCG": "infNDCG", "nDCG@k": "nDCG@k~ht", "DCG": "DCG~ht",
        "DCG@k": "DCG@k~ht", "NumRel": "NumRel~ht", "NumRelRet": "NumRelRet~ht"},
    "stratified": {"AP": "AP~ht", "AP@k": "AP@k~ht", "P@k": "P@k~ht", "R@k": "R@k~ht",
        "Rprec": "Rprec~ht", "nDCG": "infNDCG", "nDCG@k": "nDCG@k~ht", "DCG": "DCG~ht",
        "DCG@k": "DCG@k~ht", "NumRel": "NumRel~ht", "NumRelRet": "NumRelRet~ht"},
    "poisson": {"AP": "AP~ht", "AP@k": "AP@k~ht", "P@k": "P@k~ht", "R@k": "R@k~ht",
        "Rprec": "Rprec~ht", "nDCG": "nDCG~ht", "nDCG@k": "nDCG@k~ht", "DCG": "DCG~ht",
        "DCG@k": "DCG@k~ht", "NumRel": "NumRel~ht", "NumRelRet": "NumRelRet~ht"},
    "inclusion": {"AP": "statAP", "AP@k": "statAP@k", "P@k": "P@k~ht", "R@k": "R@k~ht",
        "Rprec": "Rprec~ht", "nDCG": "nDCG~ht", "nDCG@k": "nDCG@k~ht", "DCG": "DCG~ht",
        "DCG@k": "DCG@k~ht", "NumRel": "NumRel~ht", "NumRelRet": "NumRelRet~ht"},
    "with-replacement": {"AP": "AP~hh", "AP@k": "AP@k~hh", "P@k": "P@k~ht", "R@k": "R@k~hh",
        "Rprec": "Rprec~hh", "nDCG": "nDCG~ht", "nDCG@k": "nDCG@k~ht", "DCG": "DCG~ht",
        "DCG@k": "DCG@k~ht", "NumRel": "NumRel~hh", "NumRelRet": "NumRelRet~hh"},
    "importance": {"AP": "AP~hh", "AP@k": "AP@k~hh", "P@k": "P@k~is", "R@k": "R@k~is",
        "Rprec": "Rprec~hh", "nDCG": "nDCG~is", "nDCG@k": "nDCG@k~is", "DCG": "DCG~is",
        "DCG@k": "DCG@k~is", "NumRel": "NumRel~hh", "NumRelRet": "NumRelRet~hh"},
}
"""design -> plain measure -> the name of its default estimator."""

REACHING: dict[str, dict[str, str]] = {
    "with-replacement": {"P@k": "P@k~hh", "nDCG": "nDCG~hh", "nDCG@k": "nDCG@k~hh",
                         "DCG": "DCG~hh", "DCG@k": "DCG@k~hh"},
}
"""Where it differs, the default on samples whose every draw could reach every document
(:func:`sampleval.estimation.spec.draws_reach_every_document`: ``active`` with a uniform
share), design -> plain measure -> estimator name."""

REACHING_LABEL = "every draw reaches every document"

SIMPLE_RANDOM: dict[str, dict[str, str]] = {
    "stratified": {"AP": "AP~ht(bias=taylor-jackknife)"},
}
"""Where it differs, the default on samples that the method that made them says are one
simple random sample of each topic's frame (``uniform``, infAP's design;
:func:`sampleval.estimation.setup.simple_random`), design -> plain measure -> estimator
name."""

SIMPLE_RANDOM_LABEL = "one simple random sample per topic"

COMPARE: dict[str, str] = {
    "census": "AP~ht", "stratified": "AP~ht", "poisson": "AP~ht", "inclusion": "AP~ht",
    "with-replacement": "AP~hh", "importance": "AP~hh",
}
"""design -> the estimator ``compare`` uses when none is named: the design's default AP
where its errors are centred (HT and the per-draw ~hh keep the paired test's level), AP~ht
where the default AP is a reference algorithm (inclusion's statAP; docs/guide/compare.md)."""


def measure_key(base: str, cutoff: int | None) -> str:
    """The table's key of ``base[@cutoff]``: ``AP``, ``P@k``."""
    return base if cutoff is None else f"{base}{CUTOFF}"


def default_name(design: str, base: str, cutoff: int | None,
                 reach_every_document: bool = False, simple_random: bool = False) -> str | None:
    """The default estimator's name of ``base[@cutoff]`` on ``design`` with the cutoff
    filled in (``P@10~ht``), or None when the table has none; ``reach_every_document``
    (:data:`REACHING`) and ``simple_random`` (:data:`SIMPLE_RANDOM`) pick the variants."""
    key = measure_key(base, cutoff)
    name = REACHING.get(design, {}).get(key) if reach_every_document else None
    name = name or (SIMPLE_RANDOM.get(design, {}).get(key) if simple_random else None)
    name = name or DEFAULTS.get(design, {}).get(key)
    if name is None or cutoff is None:
        return name
    return name.replace(CUTOFF, f"@{cutoff}")


VARIANTS = ((REACHING, REACHING_LABEL), (SIMPLE_RANDOM, SIMPLE_RANDOM_LABEL))
"""The variant tables, each with the label that names it after the design."""


def rows() -> list[tuple[str, str, str]]:
    """The table as ``(design, measure, estimator)`` rows, the variants' (:data:`VARIANTS`)
    with the design written ``DESIGN (LABEL)``: ``stratified (one simple random sample per
    topic)``."""
    out = [(d, m, e) for d, table in DEFAULTS.items() for m, e in table.items()]
    out += [(f"{d} ({label})", m, e) for variant, label in VARIANTS
            for d, table in variant.items() for m, e in table.items()]
    return out


def markdown() -> str:
    """The table as Markdown, a measure per row and a design per column (each variant of
    :data:`VARIANTS` as a column of its own, after its design's): ``docs/guide/defaults.md``."""
    columns = [(d, DEFAULTS[d]) for d in DEFAULTS]
    for variant, label in VARIANTS:
        for design, table in variant.items():
            at = [d for d, _ in columns].index(design)
            columns.insert(at + 1, (f"{design} ({label})", {**DEFAULTS[design], **table}))
    measures = list(dict.fromkeys(m for _, table in columns for m in table))
    lines = ["# Default estimators", "",
             "Which estimator `sampleval estimate` (and `compare`, `simulate`, campaigns and the",
             "library) uses for a plain measure, by the design of the sample. Generated from",
             "`sampleval/estimation/defaults.py` (which says why each) by",
             "`python scripts/defaults_doc.py`; `sampleval methods --defaults` prints the same",
             "table (`-f tsv` for `design, measure, estimator` rows). `@k` stands for any",
             "cutoff; a blank cell: no default estimator (name one with `-m`). Pooled samples",
             "are evaluated exactly (`sampleval evaluate`).", "",
             "| measure | " + " | ".join(d for d, _ in columns) + " |",
             "|---" * (len(columns) + 1) + "|"]
    for m in measures:
        cells = [f"`{t[m]}`" if m in t else "" for _, t in columns]
        lines.append(f"| `{m}` | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
