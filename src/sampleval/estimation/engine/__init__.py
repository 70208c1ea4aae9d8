"""The one engine of the design-based estimators (issue 28): the per-topic views of a pool
and a sample (:mod:`.views`), the estimands (:mod:`.estimands`), every delete-one jackknife
(:mod:`.replicates`), the compiled kernels (:mod:`.kernels`) and the anticipated variances
of a design (:mod:`.anticipated`); the families (``~ht``, ``~hh``, ``~is``, ``~ppi``) are
presets over it (:mod:`sampleval.estimation.families`), the rows and intervals
:mod:`sampleval.estimation.result`'s."""
