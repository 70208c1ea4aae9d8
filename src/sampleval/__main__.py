"""``python -m sampleval``: the command line (as the ``sampleval`` script)."""

from sampleval.cli import main

if __name__ == "__main__":
    main()
