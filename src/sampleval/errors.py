"""The one error type that reaches users: it names the file, the line and what is wrong."""

from __future__ import annotations

from os import PathLike


class SampleValError(Exception):
    """Base class of every error sampleval reports to a user as one line."""


class InputError(SampleValError):
    """Bad input: a file that cannot be read, or a line that does not fit its format.

    ``str(error)`` is the one line the command line prints: ``path:line: message``
    (``path: message`` when no single line is to blame).
    """

    def __init__(self, path: str | PathLike[str] | None, line: int | None, message: str) -> None:
        self.path = None if path is None else str(path)
        self.line = line
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.path or "<input>"
        if self.line is not None:
            where = f"{where}:{self.line}"
        return f"{where}: {self.message}"


class UsageError(SampleValError):
    """A request that cannot be carried out as asked (unknown measure, conflicting options)."""


class SamplingWarning(UserWarning):
    """A design that will not estimate what it seems to (a stratum left without a judgment,
    a budget the method cannot spend): the sample is still written, with the fix in the
    message."""


def short_repr(value: object) -> str:
    """``repr(value)``, cut to 40 characters, for naming a bad value in a message."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
