"""Small helpers on Arrow string columns that readers and the core types share."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def dictionary_array(column: pa.ChunkedArray | pa.Array) -> pa.DictionaryArray:
    """One dictionary array for a (possibly chunked, possibly plain string) column."""
    if not pa.types.is_dictionary(column.type):
        column = pc.dictionary_encode(column)
    if isinstance(column, pa.ChunkedArray):
        return column.unify_dictionaries().combine_chunks()
    return column


def codes_of(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Integer codes of a string column (equal codes for equal strings), int64."""
    indices = dictionary_array(column).indices
    return indices.to_numpy(zero_copy_only=False).astype(np.int64)


def row_keys(table: pa.Table, columns: Sequence[str]) -> np.ndarray:
    """One int64 per row, equal for rows with equal values in ``columns``."""
    key = np.zeros(table.num_rows, dtype=np.int64)
    for name in columns:
        codes = codes_of(table[name])
        key = key * (int(codes.max(initial=0)) + 1) + codes
    return key
