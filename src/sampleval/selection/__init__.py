"""Selection methods: every way of choosing what to judge, behind the Selector protocol.

Importing this package registers every method in ``METHODS`` (one module per method).
"""

from sampleval.selection.active import ActiveSelector
from sampleval.selection.base import (
    METHODS,
    Budget,
    Selector,
    qrels_oracle,
    register,
    simulate,
)
from sampleval.selection.depth_k import DepthKSelector
from sampleval.selection.dynamic import DynamicSelector
from sampleval.selection.importance import ImportanceSelector
from sampleval.selection.mab import MABSelector
from sampleval.selection.mtf import MTFSelector
from sampleval.selection.strata import StrataSelector
from sampleval.selection.stratified import PriorStratifiedSelector
from sampleval.selection.uniform import UniformSelector

__all__ = [
    "METHODS",
    "ActiveSelector",
    "Budget",
    "DepthKSelector",
    "DynamicSelector",
    "ImportanceSelector",
    "MABSelector",
    "MTFSelector",
    "PriorStratifiedSelector",
    "Selector",
    "StrataSelector",
    "UniformSelector",
    "qrels_oracle",
    "register",
    "simulate",
]
