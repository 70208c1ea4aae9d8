"""Research studies behind ``docs/`` (not installed; the data directories are arguments).

Each runs from the repository's root as ``python -m studies.NAME --help``; the shared
options (``--data``, default ``../shared/data/trec-covid`` beside the repository) are in
:mod:`studies._cli`. The simulation harness they use, ``sampleval simulate``'s, is
:mod:`sampleval.simulation`.
"""
