"""Estimation: :func:`~sampleval.estimation.estimates.estimate` (a Sample and runs to rows
with intervals; also ``sampleval.estimate``) over every estimator family.

- :mod:`.spec` parses estimators' names (``AP~ht(bias=taylor)``), :mod:`.family` declares a
  family, :mod:`.defaults` is the one table of a plain measure's estimator per design and
  :mod:`.setup` the depth, frame and estimators every command uses;
- :mod:`.engine` is the one engine of the design-based estimators, :mod:`.families` its
  presets (``~ht``, ``~hh``, ``~is``, ``~ppi``) and the reference algorithms (infAP, xinfAP,
  infNDCG, statAP);
- :mod:`.result` turns per-topic (value, variance, bias) into rows and intervals;
- :mod:`.compare` (paired comparisons), :mod:`.audit` (a machine judge's audit),
  :mod:`.ranks` (simultaneous rank intervals) and :mod:`.anytime` are built on them.

The layout: ../shared/DESIGN.md.
"""
