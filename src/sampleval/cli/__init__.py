"""The ``sampleval`` command line: parse, call the library, print. Errors are one line.

One module per command group (:data:`._app.COMMAND_MODULES`); each adds its commands to the
parser and imports the heavy libraries only inside them.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Sequence

from sampleval.cli._app import PROG, build_parser, fail, warn
from sampleval.errors import SampleValError

__all__ = ["main", "run"]


def run(argv: Sequence[str]) -> None:
    """Run one command line (without the program name), raising sampleval's errors."""
    parser = build_parser()
    args, extra = parser.parse_known_args(list(argv))
    if extra:  # said by the command's parser, which points to its own --help
        command = getattr(args, "command_parser", parser)
        hint = ("; 'sampleval trec_eval' takes trec_eval's options as they are"
                if command.prog == f"{PROG} evaluate" else "")
        command.error(f"unrecognized arguments: {' '.join(extra)}{hint}")
    if getattr(args, "run", None) is None:
        parser.print_help()
        raise SystemExit(2)
    args.run(args)


def main() -> None:
    """Entry point: run the command line, sampleval's errors as one line and exit code 2."""
    if sys.platform.startswith("linux"):
        # Arrow's jemalloc pool gives memory back as it goes (its default, mimalloc, kept
        # about 60 MB more after reading the 126 TREC-COVID runs); Linux wheels include it
        os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "jemalloc")
    warnings.showwarning = warn
    try:
        run(sys.argv[1:])
    except SampleValError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        fail("interrupted")
    except BrokenPipeError:  # the reader went away (e.g. `| head`): nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise SystemExit(1) from None
