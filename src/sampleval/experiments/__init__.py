"""Experiments on the methods themselves: meta-evaluation measures (:mod:`.metaeval`) and
the comparison of selection methods by simulation (:mod:`.compare_methods`, also
``python -m sampleval.experiments.compare_methods``)."""

from sampleval.experiments.metaeval import (
    bias,
    kendall_tau,
    rms_error,
    significance_agreement,
    significant_pair_accuracy,
    significant_pairs,
    tau_ap,
    variance,
)

__all__ = [
    "bias",
    "kendall_tau",
    "rms_error",
    "significance_agreement",
    "significant_pair_accuracy",
    "significant_pairs",
    "tau_ap",
    "variance",
]
