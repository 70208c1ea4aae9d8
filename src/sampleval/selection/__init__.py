"""Selection methods: every way of choosing what to judge, behind the Selector protocol.

Each method is one module of this package that declares itself with ``@register``;
:data:`METHODS` finds them all by name on first use.
"""

from sampleval.declare import Param
from sampleval.selection.base import (
    METHODS,
    Budget,
    Selector,
    qrels_oracle,
    register,
    simulate,
)

__all__ = [
    "METHODS",
    "Budget",
    "Param",
    "Selector",
    "qrels_oracle",
    "register",
    "simulate",
]
