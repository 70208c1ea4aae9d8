"""Selection methods: every way of choosing what to judge, behind the Selector protocol.

Importing this package registers every method in ``METHODS`` (one module per method).
"""

from sampleval.selection.base import (
    METHODS,
    Budget,
    Selector,
    qrels_oracle,
    register,
    simulate,
)

__all__ = ["METHODS", "Budget", "Selector", "qrels_oracle", "register", "simulate"]
