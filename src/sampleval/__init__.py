"""sampleval: choose what to judge, estimate IR measures from partial judgments."""

__version__ = "0.1.0"
