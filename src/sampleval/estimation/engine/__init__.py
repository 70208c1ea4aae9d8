"""The one engine of the design-based estimators (issue 28): the estimands
(:mod:`.estimands`), every delete-one jackknife (:mod:`.replicates`) and the compiled
kernels (:mod:`.kernels`); the families (``~ht``, ``~hh``, ``~is``, ``~ppi``) are presets
over it, the rows and intervals :mod:`sampleval.estimation.result`'s."""
