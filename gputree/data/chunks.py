"""Row chunks: data read a block of rows at a time, in global row order, and
the one way bins are learned from such blocks.

Sources (:func:`chunk_source`): a ``numpy.memmap`` (or any array) read in
row slices; a callable returning a fresh iterator of chunks (arrays,
DataFrames, ``(X, y)`` or ``(X, y, sample_weight)`` tuples); Parquet or CSV
files, a file or a folder of them, read with pyarrow (the optional extra
``gputree[parquet]``), files in sorted name order. Every source can be read
again, since binning reads the data more than once.

Bins from chunks (:func:`chunk_summary`, :func:`edges_from`) are those
:class:`gputree.data.binning.BinMapper` learns on the concatenated rows: the
rows that shape them and their subsample are chosen by global row index
(:meth:`BinMapper.sample_rows`), each chunk gives the values of its sampled
rows and the distinct codes of its categorical columns, and the edges are
computed by the one-machine functions. gputree.dask learns its partitions'
bins with the same two functions.
"""
import os

import numpy as np

from .._arrays import to_host
from .._dtypes import X_DTYPE
from .adapters import is_dataframe
from .binning import category_edges, distinct_codes, quantile_edges

#: rows per chunk read from arrays and files
DEFAULT_CHUNK_ROWS = 65_536


class Chunk:
    """One block of rows: ``X`` as read (array or DataFrame), ``y``,
    ``weight`` and ``qid`` (query ids) host vectors of its rows or None."""

    __slots__ = ("X", "y", "weight", "qid")

    def __init__(self, X, y=None, weight=None, qid=None):
        self.X, self.y, self.weight, self.qid = X, y, weight, qid

    @property
    def n_rows(self):
        return int(self.X.shape[0])


# ------------------------------------------------------------ learning bins
def local_rows(rows, offsets):
    """Per-chunk local indices (int64) of sorted global ``rows``; chunk c
    holds global rows ``offsets[c] .. offsets[c + 1]``."""
    bounds = np.searchsorted(rows, offsets)
    return [rows[a:b] - off for a, b, off in zip(bounds[:-1], bounds[1:], offsets[:-1])]


def chunk_summary(X_float, sampled, used, is_categorical):
    """What one chunk tells the binner: (its sampled rows' values, host
    float64 (k, F); per categorical feature f, the distinct codes of all its
    rows and of its used rows). ``sampled`` and ``used``: local row indices."""
    X = np.asarray(to_host(X_float))
    codes = {f: (distinct_codes(X[:, f].astype(X_DTYPE)),
                 distinct_codes(X[used, f].astype(X_DTYPE)))
             for f in np.flatnonzero(is_categorical)}
    return X[sampled].astype(X_DTYPE), codes


def edges_from(summaries, max_bins):
    """edges_of(f) for :meth:`BinMapper.fit_edges` from the chunks'
    summaries (in row order), as the one-machine fit computes them on the
    concatenated rows (one summary's sample is used as it is, not copied)."""
    sample = (summaries[0][0] if len(summaries) == 1
              else np.concatenate([s[0] for s in summaries]))

    def merged(f, which):
        return np.unique(np.concatenate([s[1][f][which] for s in summaries]))

    def edges_of(f):
        if f in summaries[0][1]:
            return category_edges(merged(f, 0), merged(f, 1), f)
        return quantile_edges(sample[:, f], max_bins)

    return edges_of


# ------------------------------------------------------------------ sources
def is_path(source):
    return isinstance(source, (str, os.PathLike))


def is_chunked(source):
    """True for the sources read in chunks: paths, callables, memmaps."""
    return is_path(source) or callable(source) or isinstance(source, np.memmap)


def chunk_source(source, label=None, weight=None, chunk_rows=DEFAULT_CHUNK_ROWS, format=None,
                 qid=None):
    """The ChunkSource of a path, a callable or an array. ``label``,
    ``weight`` and ``qid``: column names (tabular chunks), host vectors of
    every row (kept by the caller), or None."""
    columns = {k: v for k, v in (("label", label), ("weight", weight), ("qid", qid))
               if isinstance(v, str)}
    if is_path(source):
        return FileSource(source, columns, chunk_rows, format)
    if callable(source):
        return CallableSource(source, columns)
    return ArraySource(source, chunk_rows)


class ArraySource:
    """Row slices of an array (a numpy.memmap: only one slice in memory)."""

    def __init__(self, X, chunk_rows):
        if getattr(X, "ndim", None) != 2:
            raise ValueError(f"Expected a 2-D array (n_samples, n_features), got shape "
                             f"{getattr(X, 'shape', None)}.")
        self.X, self.chunk_rows = X, chunk_rows

    def chunks(self, scan=False):
        """Row slices; ``scan``: one chunk of which only the row count is known."""
        n = self.X.shape[0]
        if scan:
            yield Chunk(_RowCount(n))
            return
        for start in range(0, n, self.chunk_rows):
            yield Chunk(np.asarray(self.X[start:start + self.chunk_rows]))

    def describe(self, k):
        return f"chunk {k} (rows {k * self.chunk_rows} to {(k + 1) * self.chunk_rows - 1})"


class CallableSource:
    """``make()`` returns a fresh iterable of chunks: arrays or DataFrames, or
    tuples (X, y) or (X, y, sample_weight)."""

    def __init__(self, make, columns):
        self.make, self.columns = make, columns

    def chunks(self, scan=False):
        items = self.make()
        try:
            iterator = iter(items)
        except TypeError:
            raise TypeError("A callable source must return a fresh iterable of chunks (arrays, "
                            f"DataFrames or (X, y) tuples); it returned {type(items).__name__}."
                            ) from None
        for k, item in enumerate(iterator):
            yield split_chunk(item, self.columns, self.describe(k))

    def describe(self, k):
        return f"chunk {k}"


def split_chunk(item, columns, where):
    """A Chunk of a source's item: an (X, y[, w]) tuple, or X whose label,
    weight and qid columns (``columns``: 'label'/'weight'/'qid' -> name) are
    split off."""
    y = w = q = None
    if isinstance(item, tuple):
        if len(item) not in (2, 3):
            raise ValueError(f"{where} is a tuple of {len(item)}; chunks are X, (X, y) or "
                             "(X, y, sample_weight).")
        X, y, w = (item + (None,))[:3]
    else:
        X = item
    if columns:
        if not is_dataframe(X):
            raise ValueError(f"{where}: label/weight/qid name columns "
                             f"{sorted(columns.values())}, "
                             f"but the chunk is a {type(X).__name__}, not a DataFrame. Yield "
                             "DataFrames or (X, y) tuples.")
        missing = [name for name in columns.values() if name not in X.columns]
        if missing:
            raise ValueError(f"{where} has no column {missing[0]!r} (named as "
                             f"{[k for k, v in columns.items() if v == missing[0]][0]}); its "
                             f"columns are {[str(c) for c in X.columns]}.")
        y = X[columns["label"]].to_numpy() if "label" in columns else y
        w = X[columns["weight"]].to_numpy() if "weight" in columns else w
        q = X[columns["qid"]].to_numpy() if "qid" in columns else q
        X = X.drop(columns=list(columns.values()))
    if getattr(X, "ndim", 2) != 2:
        raise ValueError(f"{where} has shape {getattr(X, 'shape', None)}; chunks are 2-D "
                         "(rows, features).")
    return Chunk(X, _vector(y, X, where, "y"), _vector(w, X, where, "sample_weight"),
                 _vector(q, X, where, "qid"))


def _vector(v, X, where, name):
    if v is None:
        return None
    v = np.asarray(to_host(v))
    if v.shape[:1] != (X.shape[0],):
        raise ValueError(f"{where}: {name} has shape {v.shape} but the chunk has "
                         f"{X.shape[0]} rows.")
    return v


# -------------------------------------------------------------------- files
def _pyarrow():
    try:
        import pyarrow
        import pyarrow.csv  # noqa: F401
        import pyarrow.dataset  # noqa: F401
        import pyarrow.parquet  # noqa: F401
    except ImportError as exc:
        raise ImportError("Reading Parquet or CSV files needs pyarrow: pip install "
                          "'gputree[parquet]' (or pip install pyarrow).") from exc
    return pyarrow


def _file_format(path, format):
    if format is not None:
        if format not in ("parquet", "csv"):
            raise ValueError(f"format must be 'parquet' or 'csv', got {format!r}.")
        return format
    if os.path.isdir(path):
        return "parquet"
    return "csv" if str(path).lower().endswith((".csv", ".csv.gz")) else "parquet"


class FileSource:
    """Parquet or CSV files (a file or a folder of them), read with pyarrow
    in record batches of about ``chunk_rows`` rows, files in sorted name
    order; each batch becomes a pandas DataFrame (dictionary columns become
    'category' columns)."""

    def __init__(self, path, columns, chunk_rows, format):
        pa = _pyarrow()
        if not os.path.exists(path):
            raise FileNotFoundError(f"No such file or folder: {str(path)!r}.")
        self.format = _file_format(path, format)
        self.files = sorted(pa.dataset.dataset(path, format=self.format).files)
        if not self.files:
            raise ValueError(f"{str(path)!r} holds no {self.format} files.")
        self.columns, self.chunk_rows = columns, chunk_rows
        self._where = []

    def _batches(self, path, columns):
        pa = _pyarrow()
        if self.format == "parquet":
            return pa.parquet.ParquetFile(path).iter_batches(batch_size=self.chunk_rows,
                                                             columns=columns)
        options = pa.csv.ConvertOptions(include_columns=columns) if columns else None
        return pa.csv.open_csv(path, convert_options=options)

    def _scan_columns(self, path):
        """Columns the first pass needs: label, weight, qid and dictionary
        (category) columns of a Parquet file; None (all) for CSV."""
        if self.format != "parquet":
            return None
        schema = _pyarrow().parquet.read_schema(path)
        names = set(self.columns.values())
        names |= {f.name for f in schema if str(f.type).startswith("dictionary")}
        return [f.name for f in schema if f.name in names]

    def chunks(self, scan=False):
        """Chunks in row order; ``scan``: only the label, weight, qid and category
        columns are read (a Parquet file holding none of them is one chunk
        of which only the row count is known)."""
        k, self._where = 0, []
        for path in self.files:
            columns = self._scan_columns(path) if scan else None
            if columns == []:
                batches = [_RowCount(_pyarrow().parquet.ParquetFile(path).metadata.num_rows)]
            else:
                batches = self._batches(path, columns)
            for batch in batches:
                if k == len(self._where):
                    self._where.append(os.path.basename(path))
                yield split_chunk(batch if isinstance(batch, _RowCount) else batch.to_pandas(),
                                  self.columns, self.describe(k))
                k += 1
            del batches
            _release_arrow_memory()

    def describe(self, k):
        where = f" of file {self._where[k]!r}" if k < len(self._where) else ""
        return f"chunk {k}{where}"


def _release_arrow_memory():
    """Give the pages pyarrow's memory pool keeps after a file's reader is
    done back to the OS: its allocator (mimalloc or jemalloc) holds them for
    reuse (the reader's read-ahead: 2M x 28 float32 rows in 8 files, 120 MiB
    still resident after building the Dataset, twice its binned codes)."""
    _pyarrow().default_memory_pool().release_unused()


class _RowCount:
    """A chunk of which only the number of rows is needed (no column read)."""

    def __init__(self, n):
        self.shape = (n, 0)
