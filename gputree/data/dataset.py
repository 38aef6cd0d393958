"""``Dataset``: training data binned once, reusable by many fits, built from
data in memory or read in chunks (:mod:`gputree.data.chunks`) so that float
X never has to be whole in memory.

A Dataset holds the fitted feature layout (:class:`FeatureEncoder`), the bins
(:class:`BinMapper`) and the binned codes (uint8 up to 255 bins, uint16
beyond; (n_rows, n_features), C order, in memory or in a memory-mapped file),
plus the label and weights when given. Its bins are those an estimator with
the same ``max_bins`` and ``categorical_features`` (and ``random_state=None``)
learns on the concatenated rows, bit for bit, so a model fitted on it is the
in-memory model.

Chunked sources are read three times: a scan (row counts, label, weights,
the union of every chunk's categories; Parquet reads only those columns),
the sample (the values of the global subsample rows of the in-memory binner,
and the categorical codes), and the binning.
"""
import numbers

import numpy as np

from .._dtypes import MAX_NON_MISSING_BINS, bin_dtype
from .._progress import Progress
from ..backends import get_backend
from .adapters import is_dataframe, is_sparse
from .binned import BinnedData, bin_with
from .binning import BinMapper, used_rows
from .chunks import (DEFAULT_CHUNK_ROWS, chunk_source, chunk_summary, edges_from, is_chunked,
                     local_rows)
from .encoder import FeatureEncoder
from .training import (DEFAULT_BINNING_SEED, TrainingInputs, bin_training_data, binning_seed,
                       seed_from)
from .validation import check_int, check_sample_weight


class Dataset:
    """Binned training data, reused across fits.

    Parameters
    ----------
    source : X in memory (every kind ``fit`` accepts), a ``numpy.memmap``,
        a path to Parquet data (a file or a folder of files) or a CSV file
        (pyarrow: ``pip install 'gputree[parquet]'``), or a callable that
        returns a fresh iterable of chunks (arrays, DataFrames, ``(X, y)`` or
        ``(X, y, sample_weight)`` tuples, rows in order).
    label, weight : a column name of tabular data, a vector of one entry per
        row, or None. ``fit(dataset)`` takes y and sample_weight from them.
    qid, group : the query of each row for ranking (rows of a query
        contiguous): ``qid`` a column name or a vector of query ids per row,
        ``group`` a vector of the queries' sizes (as the rankers' ``fit``
        arguments), or None. ``fit(dataset)`` of a ranker takes them.
    categorical_features, max_bins : as the estimators' parameters; an
        estimator fitted on the Dataset must agree with them.
    random_state : int or None: the bin-edge subsample (drawn with more
        than 200,000 rows) is the one an estimator with this ``random_state``
        draws; an estimator of another int or None seed refuses the Dataset
        then (its bins would differ).
    reference : a Dataset whose feature layout and bins this one uses
        (validation data, ``eval_set``), so that nothing is learned here.
    binned_path : None (codes in memory) or a file to hold the codes as a
        ``numpy.memmap`` (data larger than memory).
    chunk_rows : rows per chunk read from arrays and files.
    format : 'parquet' or 'csv' for a path (None: from the name).
    verbose : report the passes over chunked data.
    """

    def __init__(self, source, label=None, weight=None, categorical_features=None, max_bins=255,
                 random_state=None, reference=None, binned_path=None,
                 chunk_rows=DEFAULT_CHUNK_ROWS, format=None, verbose=False, qid=None,
                 group=None):
        self.max_bins = check_int(max_bins, "max_bins", 2, MAX_NON_MISSING_BINS)
        self.categorical_features = categorical_features
        self.random_state = random_state
        self._seed = _binning_seed(random_state)
        if reference is not None and not isinstance(reference, Dataset):
            raise TypeError(f"reference must be a gputree.Dataset, got {type(reference).__name__}.")
        self.chunk_rows = check_int(chunk_rows, "chunk_rows", 1)
        self._source = None
        if qid is not None and group is not None:
            raise ValueError("Pass either qid or group (both give the rows' queries), not both.")
        if is_chunked(source):
            self._source = chunk_source(source, label, weight, self.chunk_rows, format, qid)
            self._build_from_chunks(label, weight, qid, reference, binned_path, verbose)
        else:
            self._build_in_memory(source, label, weight, qid, reference, binned_path)
        if group is not None:
            self.qid = _group_ids(group, self.n_rows)

    # ------------------------------------------------------------ building
    def _build_in_memory(self, X, label, weight, qid, reference, binned_path):
        X, y, w, q = _split_columns(X, label, weight, qid)
        if reference is None:
            inputs, _ = bin_training_data(X, self.max_bins, self.categorical_features, "cpu",
                                          self._seed, w)
            self.encoder, self.bin_mapper = inputs.encoder, inputs.bin_mapper
            codes = inputs.data.X_binned
        else:
            self._use_bins_of(reference)
            codes = bin_with(get_backend("cpu"), self.bin_mapper,
                             self.encoder.transform(X, "the reference Dataset")).X_binned
        self._set_rows(codes.shape[0], y, w, q)
        self.codes = _store(codes, binned_path)

    def _use_bins_of(self, reference):
        self.encoder, self.bin_mapper = reference.encoder, reference.bin_mapper
        if self.max_bins != reference.max_bins:
            raise ValueError(f"max_bins={self.max_bins} differs from the reference Dataset's "
                             f"max_bins={reference.max_bins}; leave max_bins at the reference's.")

    def _set_rows(self, n_rows, y, w, q):
        self.n_rows = int(n_rows)
        self.qid = None if q is None else _whole_vector(q, n_rows, "qid")
        self.label = None if y is None else _whole_vector(y, n_rows, "label")
        self.weight = None if w is None else check_sample_weight(
            _whole_vector(w, n_rows, "weight"), n_rows)

    def _build_from_chunks(self, label, weight, qid, reference, binned_path, verbose):
        n_rows, y, w, q, categories = self._scan(label, weight, qid)
        self._set_rows(n_rows, y, w, q)
        n_chunks = -(-n_rows // self.chunk_rows)
        progress = Progress((1 if reference else 2) * n_chunks, verbose, "Dataset")
        try:
            if reference is None:
                self._learn_bins(categories, progress)
            else:
                self._use_bins_of(reference)
            self.codes = self._bin_chunks(self.encoder, self.bin_mapper, binned_path, progress)
        finally:
            progress.close()

    def _scan(self, label, weight, qid):
        """First pass: (rows, y or None, weights or None, query ids or None,
        column name -> union of the chunks' pandas categories in order of
        appearance)."""
        n_rows, ys, ws, qs, categories = 0, [], [], [], {}
        for k, chunk in enumerate(self._source.chunks(scan=True)):
            n_rows += chunk.n_rows
            ys.append(chunk.y)
            ws.append(chunk.weight)
            qs.append(chunk.qid)
            if is_dataframe(chunk.X):
                _union_categories(categories, chunk.X)
        y = _given_once(label, ys, self._source, "label", "y")
        w = _given_once(weight, ws, self._source, "weight", "sample_weight")
        q = _given_once(qid, qs, self._source, "qid", "qid")
        if n_rows == 0:
            raise ValueError("The source holds no rows; a Dataset needs at least one.")
        return n_rows, y, w, q, categories

    def _encoded_chunks(self, encoder, progress, categories=None):
        """(global offset, chunk's float X) in row order; with ``categories``
        the encoder is fitted on the first chunk with those categories."""
        offset = 0
        for k, chunk in enumerate(self._source.chunks()):
            where = self._source.describe(k)
            if chunk.n_rows == 0:
                continue
            if categories is not None and offset == 0:
                _fit_layout(encoder, chunk.X, categories, where)
            X = _encode(encoder, chunk.X, where)
            del chunk       # the source's buffers go before it reads the next chunk
            yield offset, X
            offset += X.shape[0]
            progress.step(rows=offset)
        if offset != self.n_rows:
            raise ValueError(f"The source gave {offset} rows on this read and {self.n_rows} on "
                             "the first; a chunked source must give the same rows every time.")

    def _learn_bins(self, categories, progress):
        """Second pass: the bins of the concatenated rows."""
        encoder = FeatureEncoder(self.categorical_features)
        mapper, summaries, sampled, used = None, [], None, None
        for offset, X in self._encoded_chunks(encoder, progress, categories):
            if mapper is None:
                mapper = BinMapper(self.max_bins, encoder.is_categorical_,
                                   random_state=self._seed)
                used = used_rows(self.n_rows, self.weight)
                sampled = mapper.sample_rows(used)
            bounds = np.array([offset, offset + X.shape[0]])
            summaries.append(chunk_summary(X, local_rows(sampled, bounds)[0],
                                           local_rows(used, bounds)[0],
                                           encoder.is_categorical_))
        mapper.fit_edges(encoder.n_features_in_, edges_from(summaries, self.max_bins))
        self.encoder, self.bin_mapper = encoder, mapper

    def _bin_chunks(self, encoder, mapper, binned_path, progress):
        """Last pass: the codes (n_rows, n_features), C order."""
        codes = _allocate((self.n_rows, encoder.n_features_in_), bin_dtype(mapper.n_bins_),
                          binned_path)
        for offset, X in self._encoded_chunks(encoder, progress):
            codes[offset:offset + X.shape[0]] = mapper.transform(X)
        if isinstance(codes, np.memmap):
            codes.flush()
        return codes

    # ------------------------------------------------------------- reading
    @property
    def shape(self):
        return self.codes.shape

    def __len__(self):
        return self.n_rows

    @property
    def n_features_in_(self):
        return self.encoder.n_features_in_

    @property
    def feature_names_in_(self):
        return self.encoder.feature_names_in_

    def __repr__(self):
        return (f"Dataset({self.n_rows} rows x {self.n_features_in_} features, "
                f"max_bins={self.max_bins}, codes {self.codes.dtype}"
                f"{' memory-mapped' if isinstance(self.codes, np.memmap) else ''}"
                f"{', label' if self.label is not None else ''}"
                f"{', weight' if self.weight is not None else ''})")

    def binned_data(self, backend, rows=slice(None)):
        """BinnedData of the codes (``rows``: a slice) on ``backend``: only
        binned codes go to a device."""
        mapper = self.bin_mapper
        X = backend.in_binned_order(backend.asarray(self.codes[rows]))
        return BinnedData(X, mapper.n_bins_, mapper.n_bins_non_missing_,
                          mapper.is_categorical_.astype(np.uint8),
                          mapper.bin_thresholds_).kept_lean(backend)

    def subset(self, rows):
        """A Dataset of the given rows (sorted or not, int indices or a bool
        mask) with these bins (for cross-validation: binned once)."""
        rows = np.arange(self.n_rows)[np.asarray(rows)]
        part = object.__new__(Dataset)
        part.__dict__.update(self.__dict__)
        part._source = None
        part.codes = np.ascontiguousarray(self.codes[rows])
        part.n_rows = rows.size
        part.label = None if self.label is None else self.label[rows]
        part.weight = None if self.weight is None else self.weight[rows]
        part.qid = None if self.qid is None else self.qid[rows]
        return part

    # ----------------------------------------------------- for estimators
    def training_inputs(self, estimator, sample_weight):
        """TrainingInputs of a fit of ``estimator`` (its ``max_bins``,
        ``categorical_features``, ``device``) on this Dataset; weights
        (n_rows,) or None."""
        self._check_binning_params(estimator)
        weight = check_sample_weight(sample_weight, self.n_rows)
        if sample_weight is not None and not np.array_equal(
                used_rows(self.n_rows, weight), used_rows(self.n_rows, self.weight)):
            raise ValueError(
                "sample_weight gives zero weight to other rows than the Dataset's weight does; "
                "rows of zero weight do not shape the bins, so these bins are not those of this "
                "fit. Build the Dataset with weight=... (the fit's weights).")
        backend = get_backend(estimator.device)
        return TrainingInputs(backend, self.encoder, self.bin_mapper, self.binned_data(backend),
                              weight)

    def _check_binning_params(self, estimator):
        name = type(estimator).__name__
        seed = estimator.random_state
        seeded = seed is None or isinstance(seed, numbers.Integral)
        if self.n_rows > BinMapper().subsample and seeded and seed != self.random_state:
            raise ValueError(
                f"{name}(random_state={seed!r}) differs from the Dataset's random_state="
                f"{self.random_state!r}, which drew the rows that shape the bins (the Dataset "
                f"has more than {BinMapper().subsample} rows); build the Dataset with "
                f"random_state={seed!r}, or set the estimator's to {self.random_state!r}.")
        if estimator.max_bins != self.max_bins:
            raise ValueError(
                f"{name}(max_bins={estimator.max_bins}) differs from the Dataset's "
                f"max_bins={self.max_bins}; the bins are fixed when the Dataset is built. Set "
                f"the estimator's max_bins={self.max_bins} or build a Dataset with "
                f"max_bins={estimator.max_bins}.")
        if estimator.categorical_features is None:
            return
        asked = FeatureEncoder(estimator.categorical_features)
        asked.feature_names_in_, asked.categories_ = (self.encoder.feature_names_in_,
                                                      self.encoder.categories_)
        mask = asked._categorical_mask(self.n_features_in_)
        if not np.array_equal(mask, self.encoder.is_categorical_):
            raise ValueError(
                f"{name}'s categorical_features={estimator.categorical_features!r} differ from "
                "the Dataset's (categorical columns "
                f"{np.flatnonzero(self.encoder.is_categorical_).tolist()}); set them when "
                "building the Dataset and leave the estimator's at None.")

    def binned_for(self, encoder, mapper, backend, name):
        """BinnedData of these rows in a fitted model's bins (``encoder``,
        ``mapper``; ``name`` the model's, for errors)."""
        return self._with_codes(self._codes_for(encoder, mapper, name), mapper).binned_data(
            backend)

    def blocks_for(self, encoder, mapper, backend, name, block_rows):
        """BinnedData of successive blocks of ``block_rows`` rows in a fitted
        model's bins (streaming prediction)."""
        data = self._with_codes(self._codes_for(encoder, mapper, name), mapper)
        for start in range(0, self.n_rows, block_rows):
            yield data.binned_data(backend, slice(start, start + block_rows))

    def _codes_for(self, encoder, mapper, name):
        """Host codes in the given bins: this Dataset's when its bins are
        those, else the chunked source binned again with them."""
        if _same_bins(self.encoder, self.bin_mapper, encoder, mapper):
            return self.codes
        if self._source is None:
            raise ValueError(
                f"This Dataset's bins are not {name}'s, and its rows were binned from data in "
                "memory that it does not keep: pass X itself, or build the Dataset with "
                "reference=<the training Dataset>.")
        return self._bin_chunks(encoder, mapper, None, Progress(1, False, ""))

    def _with_codes(self, codes, mapper):
        data = object.__new__(Dataset)
        data.__dict__.update(self.__dict__)
        data.codes, data.bin_mapper = codes, mapper
        return data


class BinnedRows:
    """Rows already binned with a model's bins (a block of a Dataset), passed
    to predict-like methods in place of X."""

    def __init__(self, data):
        self.data = data
        self.shape = data.X_binned.shape

    def __len__(self):
        return self.shape[0]


def _binning_seed(random_state):
    """The bin-edge subsample's seed of estimators with ``random_state``
    (None or an int): every estimator draws it first from its RandomState."""
    if random_state is None:
        return DEFAULT_BINNING_SEED
    check_int(random_state, "random_state", 0, np.iinfo(np.int32).max)
    return binning_seed(random_state, seed_from(np.random.RandomState(random_state)))


def _same_bins(encoder_a, mapper_a, encoder_b, mapper_b):
    if mapper_a is mapper_b and encoder_a is encoder_b:
        return True
    if (mapper_a.n_bins_ != mapper_b.n_bins_
            or not np.array_equal(mapper_a.bin_thresholds_, mapper_b.bin_thresholds_)
            or not np.array_equal(mapper_a.is_categorical_, mapper_b.is_categorical_)
            or encoder_a.n_features_in_ != encoder_b.n_features_in_):
        return False
    names_a, names_b = encoder_a.feature_names_in_, encoder_b.feature_names_in_
    if (names_a is None) != (names_b is None) or (
            names_a is not None and list(names_a) != list(names_b)):
        return False
    cats_a, cats_b = encoder_a.categories_, encoder_b.categories_
    return cats_a.keys() == cats_b.keys() and all(cats_a[i].equals(cats_b[i]) for i in cats_a)


def _split_columns(X, label, weight, qid=None):
    """(X without its label/weight/qid columns, y, w, qid) of an in-memory
    source."""
    named = [v for v in (label, weight, qid) if isinstance(v, str)]
    if not named:
        return X, label, weight, qid
    if not is_dataframe(X):
        raise ValueError(f"label/weight/qid name columns {named}, but X is a "
                         f"{type(X).__name__}, not a DataFrame; pass the vectors themselves.")
    missing = [name for name in named if name not in X.columns]
    if missing:
        raise ValueError(f"X has no column {missing[0]!r}; its columns are "
                         f"{[str(c) for c in X.columns]}.")
    y = X[label].to_numpy() if isinstance(label, str) else label
    w = X[weight].to_numpy() if isinstance(weight, str) else weight
    q = X[qid].to_numpy() if isinstance(qid, str) else qid
    return X.drop(columns=named), y, w, q


def _group_ids(group, n_rows):
    """int64 (n_rows,) query ids 0, 1, ... of query sizes ``group``."""
    sizes = np.asarray(group)
    if sizes.ndim != 1 or not np.issubdtype(sizes.dtype, np.integer) or (sizes < 0).any() or (
            int(sizes.sum()) != n_rows):
        raise ValueError(f"group must be a vector of the queries' sizes (non-negative "
                         f"integers) summing to the Dataset's {n_rows} rows; got {group!r}.")
    return np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)


def _whole_vector(v, n_rows, name):
    v = np.asarray(v)
    if v.ndim == 0 or v.shape[0] != n_rows:
        raise ValueError(f"{name} has {v.shape[0] if v.ndim else 0} entries but the data has "
                         f"{n_rows} rows; pass one entry per row.")
    return v


def _given_once(argument, parts, source, name, tuple_name):
    """The vector of every row from the chunks' parts, or ``argument`` when it
    is a vector; chunks give it for all rows or none."""
    given = [p is not None for p in parts]
    if argument is not None and not isinstance(argument, str):
        if any(given):
            raise ValueError(f"{name} is given both as a vector and by the chunks; pass one.")
        return argument
    if not any(given):
        if isinstance(argument, str):
            raise ValueError(f"The {name} column {argument!r} was not found.")
        return None
    if not all(given):
        k = given.index(False)
        raise ValueError(f"{source.describe(k)} has no {tuple_name} while others have one; "
                         f"every chunk must give {tuple_name} (or none).")
    return np.concatenate(parts)


def _union_categories(categories, frame):
    """Add the categories of ``frame``'s 'category' columns to ``categories``
    (name -> pandas Index, in order of appearance)."""
    for name, dtype in zip(frame.columns, frame.dtypes):
        if getattr(dtype, "name", "") == "category":
            new = dtype.categories
            known = categories.get(str(name))
            categories[str(name)] = new if known is None else known.append(
                new[~new.isin(known)])


def _fit_layout(encoder, X, categories, where):
    """Fit ``encoder`` on the first chunk, then give its category columns
    the union of every chunk's categories."""
    try:
        encoder.fit_transform(X[:1])
    except (ValueError, TypeError) as exc:
        raise type(exc)(f"{where}: {exc}") from exc
    if encoder.feature_names_in_ is not None:
        for i in list(encoder.categories_):
            encoder.categories_[i] = categories[str(encoder.feature_names_in_[i])]


def _encode(encoder, X, where):
    """Float X of a chunk, with errors naming the chunk."""
    if is_sparse(X):
        raise TypeError(f"{where} is a sparse matrix; chunks are dense (arrays or DataFrames). "
                        "Pass a sparse X in memory to Dataset instead.")
    try:
        return encoder.transform(X, "the Dataset's first chunk")
    except (ValueError, TypeError) as exc:
        raise type(exc)(f"{where}: {exc}") from exc


def _allocate(shape, dtype, path):
    if path is None:
        return np.empty(shape, dtype=dtype)
    return np.lib.format.open_memmap(str(path), mode="w+", dtype=dtype, shape=shape)


def _store(codes, path):
    """``codes`` in memory, or copied to a memory-mapped file at ``path``."""
    codes = np.ascontiguousarray(codes)
    if path is None:
        return codes
    out = _allocate(codes.shape, codes.dtype, path)
    out[:] = codes
    out.flush()
    return out
