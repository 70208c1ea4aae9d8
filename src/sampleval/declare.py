"""Declarations: typed parameters and the registries of named things, filled by declaration.

Typed parameters are declared once where they belong (a selection method's, an estimator's).
A selection method lists its :class:`Param` declarations in ``Selector.parameters``;
construction (``METHODS[name](pool, budget, rng, **values)``), ``sampleval sample --param
NAME=VALUE``, method variants such as ``active:rounds=3``, ``sampleval methods`` and the
contract tests are all built from them.

Registries (:class:`Registry`: selection methods, estimator families): a method or an
estimator family declares itself once, in its own module, and registers under its name. A
registry loads lazily: the first lookup imports every module of its package (so a new file is
found without being listed anywhere) and every plugin module, named by the
``SAMPLEVAL_PLUGINS`` environment variable (comma-separated module names) or by the
``sampleval.plugins`` entry-point group of an installed package.
"""

from __future__ import annotations

import difflib
import importlib
import os
import pkgutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from sampleval.errors import UsageError

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


T = TypeVar("T")
_PLUGINS_LOADED = False


def load_plugins() -> None:
    """Import the plugin modules (see the module docstring), once per process."""
    global _PLUGINS_LOADED
    if _PLUGINS_LOADED:
        return
    _PLUGINS_LOADED = True
    names = [n.strip() for n in os.environ.get("SAMPLEVAL_PLUGINS", "").split(",") if n.strip()]
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise UsageError(f"SAMPLEVAL_PLUGINS names {name!r}, which cannot be imported: "
                             f"{exc}") from None
    from importlib.metadata import entry_points

    for entry in entry_points(group="sampleval.plugins"):
        entry.load()


def closest(name: str, known: list[str]) -> str | None:
    """The known name closest to ``name`` ignoring case (the first of ``known`` written that
    way when several are), or None when none is close."""
    lowered: dict[str, str] = {}
    for k in known:
        lowered.setdefault(k.lower(), k)
    close = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.6)
    return lowered[close[0]] if close else None


def did_you_mean(name: str, known: list[str]) -> str:
    """`` (did you mean X?)`` for the :func:`closest` known name, or nothing."""
    found = closest(name, known)
    return f" (did you mean {found}?)" if found else ""


class Registry(Generic[T]):
    """Names to declared items, loaded on first use from ``package``'s modules and plugins.

    ``kind`` names what is registered in messages ("selection method"). Registering a name
    twice is an error, so two declarations cannot silently shadow each other.
    """

    def __init__(self, kind: str, package: str) -> None:
        self.kind = kind
        self.package = package
        self._items: dict[str, T] = {}
        self._loading = False
        self._loaded = False

    def add(self, name: str, item: T) -> T:
        """Register ``item`` as ``name``; a name already taken by another item is an error."""
        existing = self._items.get(name)
        if existing is not None and existing is not item and _origin(existing) != _origin(item):
            raise UsageError(f"two {self.kind}s are named {name!r}: {_origin(existing)} and "
                             f"{_origin(item)}")
        self._items[name] = item
        return item

    def _load(self) -> None:
        if self._loaded or self._loading:
            return
        self._loading = True
        try:
            package = importlib.import_module(self.package)
            for module in pkgutil.iter_modules(package.__path__):
                if not module.name.startswith("_"):
                    importlib.import_module(f"{self.package}.{module.name}")
            load_plugins()
        finally:
            self._loading = False
        self._loaded = True

    def __getitem__(self, name: str) -> T:
        self._load()
        if name not in self._items:
            known = sorted(self._items)
            raise UsageError(f"unknown {self.kind} {name!r}{did_you_mean(name, known)} "
                             f"(one of {', '.join(known)})")
        return self._items[name]

    def __contains__(self, name: object) -> bool:
        self._load()
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        self._load()
        return iter(sorted(self._items))

    def __len__(self) -> int:
        self._load()
        return len(self._items)

    def items(self) -> list[tuple[str, T]]:
        self._load()
        return sorted(self._items.items())

    def values(self) -> list[T]:
        return [item for _, item in self.items()]

    def names(self) -> list[str]:
        return list(self)


def _origin(item: object) -> str:
    """Where an item was declared: its module and qualified name."""
    target = item if isinstance(item, type) else getattr(item, "compute", item)
    return f"{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', '?')}"
