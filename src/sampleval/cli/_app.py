"""The command-line skeleton every command module plugs into: the parser, one-line errors
and warnings, consoles, and the options several commands share.

Each command module defines ``add_commands(commands)`` that adds its sub-parsers (each with
``set_defaults(run=FUNCTION)``); :func:`build_parser` collects them. Command modules import
only light modules at import time (the standard library, ``sampleval.errors``,
``sampleval.measures.names``); numpy, pandas, scipy, numba and rich are imported inside the
functions that run a command, so ``sampleval --help`` starts instantly.
"""

from __future__ import annotations

import argparse
import importlib
import re
import shutil
import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from sampleval.errors import UsageError

if TYPE_CHECKING:
    from rich.console import Console

PROG = "sampleval"
T = TypeVar("T")
Commands = "argparse._SubParsersAction[Parser]"


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions kept as written (paragraphs), option help wrapped to the terminal, and
    ``(default: X)`` added where a default is worth saying (not None, False or a list)."""

    def __init__(self, prog: str) -> None:
        width = min(shutil.get_terminal_size((100, 24)).columns, 100)
        super().__init__(prog, max_help_position=30, width=width)

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if ("default" not in text and default not in (None, False, [], argparse.SUPPRESS)
                and action.option_strings and action.nargs != 0):
            text += f" (default: {default})"
        return text


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line (exit code 2), pointing to --help."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        where = "" if self.prog == PROG else f"{self.prog}: "  # fail() names the program
        fail(f"{where}{message} (see '{self.prog} --help')")


def add_command(commands: Any, name: str, run: Callable[[argparse.Namespace], None],
                summary: str, description: str = "") -> Parser:
    """A sub-command ``name`` that calls ``run(args)``; ``summary`` is its line in
    ``sampleval --help``, ``description`` (optional, paragraphs) heads its own help."""
    parser: Parser = commands.add_parser(name, help=summary,
                                         description=description or summary)
    parser.set_defaults(run=run, command_parser=parser)
    return parser


COMMAND_MODULES = ("evaluate", "estimate", "compare", "audit", "sample", "judge", "plan", "export",
                   "sample_eval", "trec_eval", "campaign", "simulate")


def build_parser() -> Parser:
    """The whole command line: every command module's commands."""
    from sampleval import __version__

    parser = Parser(prog=PROG, description="Choose what to judge, and evaluate search runs "
                                           "exactly or from partial judgments.")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND",
                                     parser_class=Parser)
    for module in COMMAND_MODULES:
        importlib.import_module(f"sampleval.cli.{module}").add_commands(commands)
    return parser


# -- values -----------------------------------------------------------------------------------

def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


def bounded_float(low: float, high: float) -> Callable[[str], float]:
    """An argparse type: a number in [low, high]."""
    def convert(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{text!r} is not in [{low}, {high}]")
        return value
    return convert


def rate(text: str) -> float:
    """An argparse type: a share in (0, 1]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r} must lie in (0, 1]")
    return value


_NAME = re.compile(r"(?:[^,\s(]+|\([^)]*\))+")


def split_names(texts: Sequence[str]) -> list[str]:
    """Names given repeated or comma/space-separated, flattened in order; a comma inside
    parentheses belongs to the name (``AP~ht(variance=linear,ap=paper)``)."""
    return [part for text in texts for part in _NAME.findall(text)]


def parse_params(texts: Sequence[str] | None) -> dict[str, str]:
    """``--param NAME=VALUE`` options as a dict of texts (the method converts them)."""
    params: dict[str, str] = {}
    for text in texts or []:
        name, sep, value = text.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"--param expects NAME=VALUE, not {text!r}")
        params[name.strip()] = value.strip()
    return params


# -- options several commands share ------------------------------------------------------------

def add_runs_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="+", metavar="RUN",
                        help="run files 'qid Q0 docno rank score tag' (plain or .gz; '-' "
                             "reads standard input; pipes such as <(zcat run.gz) work), "
                             "directories of runs, or glob patterns")


def add_per_topic(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-q", "--per-topic", action="store_true",
                        help="also print every topic's value, not only the mean (topic 'all')")


def add_depth(parser: argparse.ArgumentParser, help_text: str | None = None) -> None:
    parser.add_argument("-M", "--depth", type=positive_int, metavar="N",
                        help=help_text or "use only each run's top N documents per topic "
                                          "(ranked by score, ties by docno, as trec_eval "
                                          "ranks)")


def add_rel_level(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-l", "--rel-level", type=int, default=1, metavar="L",
                        help="grades at or above L are relevant (trec_eval -l); nDCG always "
                             "uses the grades")


def add_duplicates(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--duplicates", choices=("error", "first", "last"), default="error",
                        help="a document a run repeats within a topic: error (stop and name "
                             "both lines, as trec_eval does), first (keep the occurrence that "
                             "ranks highest: highest score, then earlier line), last (keep "
                             "the last line, as sample_eval.pl and pytrec_eval do)")


def check_not_a_run(first: str, comes_first: str, usage: str) -> None:
    """One line when the first argument, which ``usage`` wants to be ``comes_first``, looks
    like a run file (the arguments swapped)."""
    from pathlib import Path

    from sampleval.io._source import looks_like_run

    if first != "-" and Path(first).is_file() and looks_like_run(first):
        raise UsageError(f"{first}: the first argument looks like a TREC run file; give "
                         f"{comes_first} first ({usage})")


def check_stdin_once(*inputs: str | Sequence[str]) -> None:
    """Refuse a command line that names standard input (``-``) more than once."""
    names = [name for item in inputs for name in ([item] if isinstance(item, str) else item)]
    if names.count("-") > 1:
        raise UsageError("standard input ('-') can be read only once")


def add_name_by(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--name-by", choices=("tag", "file"), default="tag",
                        help="name runs by their tag (6th column) or by file name (without "
                             "directory and .gz); runs sharing a tag are named by file "
                             "automatically, with a warning")


def add_predictions(parser: argparse.ArgumentParser, use: str) -> None:
    parser.add_argument("--predictions", metavar="FILE",
                        help="predicted relevance 'qid iter docno value' (plain or .gz; "
                             "value a grade or a probability of relevance in [0, max "
                             "grade]; documents without a line predict 0): " + use +
                             " (docs/guide/predictions.md)")


def check_predictions_used(specs: Sequence[Any], given: bool) -> None:
    """UsageError when ``--predictions`` is given and no estimator asked for reads them
    (``estimate``, ``compare``: the file would be read and silently ignored)."""
    from sampleval.estimation.family import FAMILIES

    if given and not any(FAMILIES[s.family].needs_predictions for s in specs):
        raise UsageError("--predictions: no measure asked for uses them (name a "
                         "prediction-powered estimator, e.g. -m P@10~ppi or AP~ppi; "
                         "docs/guide/predictions.md)")


def add_target(group: Any, target_help: str) -> None:
    """``--target MEASURE:HALF_WIDTH`` and ``--target-run`` (judging until confident), in
    ``group``; ``target_help`` says what the target does for the command."""
    group.add_argument("--target", metavar="MEASURE:HALF_WIDTH", help=target_help)
    group.add_argument("--target-run", action="append", metavar="RUN",
                       help="only these runs must meet the target (repeat; default: all)")


def add_output(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="write the results to FILE instead of standard output (a file "
                             "there is replaced, unless it is one of the command's inputs)")


# -- work in the background ------------------------------------------------------------------

@contextmanager
def in_background(work: Callable[..., T], *args: Any, **kwargs: Any) -> Iterator[Future[T]]:
    """Start ``work(*args, **kwargs)`` on a thread; the block runs meanwhile (for instance
    importing pandas and numba while the run files inflate and parse: ISA-L and Arrow release
    the GIL) and takes the result with ``.result()``, which re-raises the work's error."""
    with ThreadPoolExecutor(max_workers=1) as side:
        yield side.submit(work, *args, **kwargs)


def start_reading_runs(args: argparse.Namespace) -> Any:
    """``in_background`` reading of the command's runs (``args.runs``, ``args.name_by``,
    ``args.duplicates``), with a progress bar when standard error is a terminal."""
    from sampleval.io.runs import read_runs  # light: numpy, pyarrow, ISA-L

    return in_background(read_runs, args.runs, name_by=args.name_by,
                         progress=stderr_is_terminal(), duplicates=args.duplicates)


# -- output -------------------------------------------------------------------------------------

class Output:
    """Where a command's results go: standard output, or the ``-o`` FILE, checked before
    any work is done (a directory, a missing parent, one of the ``inputs`` or a file inside
    an input directory is refused, one line) and written whole (to a temporary name, then
    renamed)."""

    def __init__(self, path: str | None, inputs: Sequence[str] = ()) -> None:
        from pathlib import Path

        from sampleval.errors import UsageError

        self.path = None if path is None else Path(path)
        if self.path is None:
            return
        if self.path.is_dir():
            raise UsageError(f"{self.path}: is a directory; -o takes a file name")
        if not self.path.parent.is_dir():
            raise UsageError(f"{self.path}: no such directory {self.path.parent}")
        target = self.path.resolve()
        for given in map(Path, inputs):
            inside = given.is_dir() and given.resolve() in target.parents
            if inside or (self.path.exists() and given.exists() and self.path.samefile(given)):
                raise UsageError(f"{self.path}: is one of the command's inputs, or inside one; "
                                 "-o would overwrite it: write the results elsewhere")

    def write(self, text: str) -> None:
        if self.path is None:
            sys.stdout.write(text)
            return
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(self.path)

    def console(self) -> Console:
        """A console for tables: the terminal's width on a terminal, else wide and plain
        (its text is collected; :meth:`write` it)."""
        import io

        from rich.console import Console

        if self.path is None:
            return stdout_console()
        return Console(file=io.StringIO(), width=240, color_system=None)

    def write_console(self, console: Console) -> None:
        """Write what a :meth:`console` collected (a no-op for standard output)."""
        import io

        if self.path is not None and isinstance(console.file, io.StringIO):
            self.write(console.file.getvalue())


def stderr_is_terminal() -> bool:
    return sys.stderr.isatty()


def stdout_console() -> Console:
    """The console tables print to: the terminal's width, or wide enough when redirected."""
    from rich.console import Console

    console = Console()
    return console if console.is_terminal else Console(width=240)


def fail(message: str) -> NoReturn:
    """One line on standard error and exit code 2."""
    sys.stderr.write(f"{PROG}: error: {message}\n")
    raise SystemExit(2)


def warn(message: Warning | str, *_: object, **__: object) -> None:
    """Warnings as one line on standard error (``warnings.showwarning``)."""
    sys.stderr.write(f"{PROG}: warning: {message}\n")
