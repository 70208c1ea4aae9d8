"""Readers and writers for the field's file formats (plain or gzipped)."""

from sampleval.io.qrels import read_qrels, write_qrels
from sampleval.io.runs import expand_run_paths, read_run, read_runs, write_run
from sampleval.io.samples import read_prels, read_sample_qrels, write_prels, write_sample_qrels

__all__ = [
    "expand_run_paths",
    "read_prels",
    "read_qrels",
    "read_run",
    "read_runs",
    "read_sample_qrels",
    "write_prels",
    "write_qrels",
    "write_run",
    "write_sample_qrels",
]
