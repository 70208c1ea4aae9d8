"""Typed parameters, declared once where they belong (a selection method's, an estimator's).

A selection method lists its :class:`Param` declarations in ``Selector.parameters``;
construction (``METHODS[name](pool, budget, rng, **values)``), ``sampleval sample --param
NAME=VALUE``, method variants such as ``active:rounds=3``, ``sampleval methods`` and the
contract tests are all built from them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sampleval.errors import UsageError
from sampleval.registry import did_you_mean

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


@dataclass(frozen=True)
class Param:
    """One parameter: its name, type (``int``, ``float``, ``str`` or ``bool``), default
    (None: not set), one line of help, the allowed ``choices`` (if a closed set), and a
    ``check`` with the words ``requirement`` that state it (``"at least 1"``)."""

    name: str
    type: type
    default: Any
    help: str
    choices: tuple[Any, ...] = ()
    check: Callable[[Any], bool] | None = None
    requirement: str = ""

    def convert(self, value: Any, method: str) -> Any:
        """``value`` (given as text or as a Python value) as this parameter's type, checked."""
        if value is None:
            return None
        where = f"{method}: parameter {self.name}"
        try:
            converted = self._as_type(value)
        except (TypeError, ValueError):
            raise UsageError(f"{where} must be {self.kind_text()}, not {value!r}") from None
        if self.choices and converted not in self.choices:
            options = ", ".join(map(str, self.choices))
            raise UsageError(f"{where} must be one of {options}, not {value!r}"
                             f"{did_you_mean(str(value), [str(c) for c in self.choices])}")
        if self.check is not None and not self.check(converted):
            raise UsageError(f"{where} must be {self.requirement}, not {value!r}")
        return converted

    def _as_type(self, value: Any) -> Any:
        if self.type is bool:
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in _TRUE | _FALSE:
                return text in _TRUE
            raise ValueError(value)
        if self.type is int:
            if isinstance(value, bool):
                raise TypeError(value)
            if isinstance(value, float):
                if not value.is_integer():
                    raise ValueError(value)
                return int(value)
            return int(str(value).strip())
        if self.type is float:
            if isinstance(value, bool):
                raise TypeError(value)
            return float(str(value).strip()) if isinstance(value, str) else float(value)
        return str(value).strip()

    def kind_text(self) -> str:
        return {int: "a whole number", float: "a number", bool: "true or false",
                str: "text"}.get(self.type, self.type.__name__)

    def describe(self) -> str:
        """One line for help texts: the help, the choices and the default."""
        parts = [self.help]
        if self.choices:
            parts.append(f"one of {', '.join(map(str, self.choices))}")
        elif self.requirement:
            parts.append(self.requirement)
        if self.default is not None:
            parts.append(f"default {self.default}")
        return "; ".join(parts)


def resolve(declared: Sequence[Param], given: Mapping[str, Any], method: str) -> dict[str, Any]:
    """Every declared parameter's value: the given ones converted and checked, the others at
    their defaults. An undeclared name is a UsageError naming the ones the method takes."""
    names = [p.name for p in declared]
    unknown = [name for name in given if name not in names]
    if unknown:
        hint = did_you_mean(unknown[0], names)
        raise UsageError(f"method {method!r} has no parameter {unknown[0]!r}{hint} "
                         f"(it takes: {', '.join(names) or 'none'})")
    return {p.name: p.convert(given[p.name], method) if p.name in given else p.default
            for p in declared}


def parse_assignments(text: str, separator: str = ";") -> dict[str, str]:
    """``NAME=VALUE;NAME=VALUE`` as a dict of texts (values are converted by the method's
    declarations); UsageError when a part is not NAME=VALUE."""
    out: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(separator))):
        name, sep, value = part.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"expected NAME=VALUE, not {part!r}")
        out[name.strip()] = value.strip()
    return out
