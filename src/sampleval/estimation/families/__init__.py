"""The estimator families, one module each, loaded by the registry
(:data:`sampleval.estimation.family.FAMILIES`) with the plugins: ``~ht``, ``~hh``, ``~is``
(:mod:`.importance`) and ``~ppi``, presets over :mod:`sampleval.estimation.engine`; the
reference algorithms :mod:`.inferred` (infAP, xinfAP, infNDCG, iP) and :mod:`.statap`.
Modules whose names start with ``_`` are helpers, not families."""
