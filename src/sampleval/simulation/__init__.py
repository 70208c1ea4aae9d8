"""Simulations of the methods themselves: ``sampleval simulate`` and ``sampleval report``.

One job per module: :mod:`.grid` (methods x budgets x splits, cell keys), :mod:`.seeds`
(each trial's seed), :mod:`.splits` (which runs select), :mod:`.targets` (what is estimated,
and how, per method), :mod:`.truth` (the exact values), :mod:`.estimates` (one sample's
estimates of every target), :mod:`.predictors` (seeded predictions of controlled quality),
:mod:`.trial` (one cell's trials), :mod:`.backends` (local processes, Dask), :mod:`.schedule`
(which cells run first), :mod:`.store` (the output directory, resumable), :mod:`.metaeval`
(rms, bias, variance, tau, tau_AP, Voorhees' accuracy), :mod:`.summary` (summary.csv),
:mod:`.figures` and :mod:`.report` (figures and the HTML page), and :mod:`.runner`
(``simulate()``, the whole command as a library call).

The studies behind the docs' figures are not part of the package: ``studies/`` beside
``benchmarks/`` in the repository, each ``python -m studies.NAME`` from its root.
"""
