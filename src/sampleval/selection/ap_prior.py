"""The AP-prior, read by the selection methods (``active``, ``stratified``, the audit's):
its home is :mod:`sampleval.core.ap_prior`, where estimation reads it too (the unseen
documents' model of ``few=completed``), since selection and estimation do not import each
other."""

from sampleval.core.ap_prior import PRIORS, document_prior, prior_at_ranks, rank_prior, run_prior

__all__ = ["PRIORS", "document_prior", "prior_at_ranks", "rank_prior", "run_prior"]
