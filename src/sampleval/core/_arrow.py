"""Small helpers on Arrow string columns that readers and the core types share.

Only numpy and pyarrow: the readers run in background threads while the command line imports
pandas and numba, so nothing on the reading path may wait for those imports.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

DENSE_KEYS = 1 << 24  # flags (bytes) has_repeats may mark: 16 MB at most


def dictionary_array(column: pa.ChunkedArray | pa.Array) -> pa.DictionaryArray:
    """One dictionary array for a (possibly chunked, possibly plain string) column."""
    if not pa.types.is_dictionary(column.type):
        column = pc.dictionary_encode(column)
    if isinstance(column, pa.ChunkedArray):
        if column.num_chunks == 1:
            return column.chunk(0)
        return column.unify_dictionaries().combine_chunks()
    return column


def codes_of(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Integer codes of a string column (equal codes for equal strings), int64."""
    indices = dictionary_array(column).indices
    return numpy_of(indices).astype(np.int64)


def repeats(table: pa.Table, columns: Sequence[str], keep: str = "first") -> np.ndarray:
    """For each row, whether another row has the same values in ``columns`` and wins:
    ``keep="first"``, the earlier row; ``keep="last"``, the later. Rows that repeat nothing
    are False; one row of each repeated key is False too."""
    out = np.zeros(table.num_rows, dtype=bool)
    rows, key = _shared_keys(table, columns)
    if not len(rows):
        return out
    if keep == "last":
        rows, key = rows[::-1], key[::-1]
    winners = np.unique(key, return_index=True)[1]  # first occurrence in this row order
    out[rows] = True
    out[rows[winners]] = False
    return out


def has_repeats(table: pa.Table, columns: Sequence[str]) -> bool:
    """Whether two rows have the same values in ``columns`` (:func:`repeats`' question
    without its answer row by row). When the combinations of the columns' distinct values
    number at most :data:`DENSE_KEYS` (a run: topics times docnos), each row marks its own
    in a table of flags, and a repeat marks fewer flags than there are rows (a third of the
    time of a hash count); otherwise a hash count of the keys that may repeat."""
    encoded = [dictionary_array(table[name]) for name in columns]
    cells = math.prod(len(e.dictionary) for e in encoded)
    if table.num_rows and cells <= DENSE_KEYS:
        key = np.zeros(table.num_rows, dtype=np.int64)
        for e in encoded:
            key = key * len(e.dictionary) + numpy_of(e.indices)
        seen = np.zeros(cells, dtype=bool)
        seen[key] = True
        return int(np.count_nonzero(seen)) < table.num_rows
    _, key = _shared_keys(table, columns)
    return len(key) > 0 and len(pc.unique(arrow_of(key))) < len(key)


def _shared_keys(table: pa.Table, columns: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The rows whose last column's value occurs more than once, and their whole keys as
    integers (equal keys for equal values). Fast when repeats are rare: a bincount of the
    last column settles most rows."""
    codes = [codes_of(table[name]) for name in columns]
    last = codes[-1]
    if not len(last):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    rows = np.flatnonzero(np.bincount(last)[last] > 1)
    key = np.zeros(len(rows), dtype=np.int64)
    for c in codes:
        key = key * (int(c.max()) + 1) + c[rows]
    return rows, key


def packed_keys(strings: pa.Array) -> np.ndarray | None:
    """Each string of a string array as a uint64 that orders as ``strcmp`` orders the strings:
    its bytes big-endian, zero-padded to 8. None when a string is longer than 8 bytes or
    holds a NUL byte (those could not be told apart), or the array has nulls. TREC-COVID,
    MS MARCO and numeric docnos fit; integers sort and hash several times faster than
    strings."""
    n = len(strings)
    if n == 0:
        return np.zeros(0, dtype=np.uint64)
    if strings.null_count or not pa.types.is_string(strings.type):
        return None
    _, offsets_buffer, data_buffer = strings.buffers()
    offsets = np.frombuffer(offsets_buffer, np.int32, n + 1, strings.offset * 4)
    data = np.frombuffer(data_buffer or b"\x00", np.uint8)
    lengths = np.diff(offsets)
    width = int(lengths.max())
    if width > 8 or not (data[offsets[0]:offsets[-1]].all()):
        return None
    if width == 8 and lengths.min() == 8:  # fixed width (TREC-COVID's docnos): a view
        return data[offsets[0]:offsets[-1]].view(">u8").astype(np.uint64)
    column = np.arange(8)
    at = np.minimum(offsets[:-1, None] + column, len(data) - 1)
    padded = np.where(column < lengths[:, None], data[at], 0).astype(np.uint8)
    return padded.view(">u8").ravel().astype(np.uint64)


# pyarrow imports pandas (when installed) the first time an Arrow array meets numpy or Python
# objects (``to_numpy``, ``pa.array``, ``pa.scalar``): 0.3 s of CPU, a third of a one-run
# ``sampleval trec_eval``. The reading and exact-measure paths convert through buffers.
_NUMPY_TYPES = {pa.int8(): np.int8, pa.int16(): np.int16, pa.int32(): np.int32,
                pa.int64(): np.int64, pa.uint8(): np.uint8, pa.uint16(): np.uint16,
                pa.uint32(): np.uint32, pa.uint64(): np.uint64, pa.float32(): np.float32,
                pa.float64(): np.float64}
_ARROW_TYPES = {np.dtype(kind): arrow for arrow, kind in _NUMPY_TYPES.items()}


def numpy_of(array: pa.Array | pa.ChunkedArray, missing: float | None = None) -> np.ndarray:
    """The values of a numeric Arrow array (no copy for one chunk without nulls), read from
    its buffers; nulls become ``missing`` when given; other arrays go through pyarrow's
    ``to_numpy``."""
    if isinstance(array, pa.ChunkedArray):
        if array.num_chunks != 1:
            kind = _NUMPY_TYPES.get(array.type)
            if kind is not None:
                parts = [numpy_of(chunk, missing) for chunk in array.chunks]
                return np.concatenate(parts) if parts else np.zeros(0, dtype=kind)
            return array.to_numpy()
        array = array.chunk(0)
    kind = _NUMPY_TYPES.get(array.type)
    if kind is None or (array.null_count and missing is None):
        return array.to_numpy(zero_copy_only=False)
    values = np.frombuffer(array.buffers()[1], dtype=kind, count=len(array),
                           offset=array.offset * np.dtype(kind).itemsize)
    if array.null_count:
        assert missing is not None
        bits = np.unpackbits(np.frombuffer(array.buffers()[0], np.uint8), bitorder="little")
        values = np.where(bits[array.offset:array.offset + len(array)] == 1, values, missing)
    return values


def arrow_of(values: np.ndarray) -> pa.Array:
    """A numeric numpy array as an Arrow array, through its buffer."""
    values = np.ascontiguousarray(values)
    return pa.Array.from_buffers(_ARROW_TYPES[values.dtype], len(values),
                                 [None, pa.py_buffer(values)])


def strings_of(values: Sequence[str]) -> pa.Array:
    """Python strings as an Arrow string array, through buffers."""
    encoded = [v.encode() for v in values]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int32)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    return pa.StringArray.from_buffers(len(encoded), pa.py_buffer(offsets),
                                       pa.py_buffer(b"".join(encoded)))
