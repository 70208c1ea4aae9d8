"""Registries of named things (selection methods, estimator families), filled by declaration.

A method or an estimator family declares itself once, in its own module, and registers under
its name. A registry loads lazily: the first lookup imports every module of its package
(so a new file is found without being listed anywhere) and every plugin module, named by the
``SAMPLEVAL_PLUGINS`` environment variable (comma-separated module names) or by the
``sampleval.plugins`` entry-point group of an installed package.
"""

from __future__ import annotations

import difflib
import importlib
import os
import pkgutil
from collections.abc import Iterator
from typing import Generic, TypeVar

from sampleval.errors import UsageError

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


def did_you_mean(name: str, known: list[str]) -> str:
    """`` (did you mean X?)`` for the closest known name ignoring case (the first of
    ``known`` written that way when several are), or nothing."""
    lowered: dict[str, str] = {}
    for k in known:
        lowered.setdefault(k.lower(), k)
    close = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.6)
    return f" (did you mean {lowered[close[0]]}?)" if close else ""


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
