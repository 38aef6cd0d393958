"""``FeatureEncoder``: the feature layout learned at fit and applied at
predict. It maps a user's ``X`` to a float array: feature names, pandas
``category`` columns (their codes, matched by category value at predict
time; unseen categories become NaN), and the categorical mask."""
import numbers

import numpy as np

from .._arrays import is_device_array
from .adapters import as_float_2d, device_matrix, is_dataframe


class FeatureEncoder:
    """Learn the feature layout at fit; encode X identically at predict.

    categorical_features : None, array of int indices, array of str names or
        bool mask (n_features,). pandas ``category`` columns are always
        categorical.
    """

    def __init__(self, categorical_features=None):
        self.categorical_features = categorical_features

    def fit_transform(self, X, device_xp=None):
        """Returns float array (n_samples, n_features), NaN for missing.

        With ``device_xp`` (cupy, on the CUDA backend), a device array X is
        checked and returned as a device array, without a host copy."""
        self.feature_names_in_ = None
        self.categories_ = {}
        if device_xp is not None and is_device_array(X):
            array = device_matrix(X, device_xp)
            self.n_features_in_ = array.shape[1]
            self.is_categorical_ = self._categorical_mask(array.shape[1])
            return array
        if is_dataframe(X):
            self.feature_names_in_ = np.asarray([str(c) for c in X.columns], dtype=object)
            self.categories_ = {i: X.iloc[:, i].cat.categories
                                for i, dtype in enumerate(X.dtypes)
                                if getattr(dtype, "name", "") == "category"}
        array = self._encode(X)
        self.n_features_in_ = array.shape[1]
        self.is_categorical_ = self._categorical_mask(array.shape[1])
        return array

    def transform(self, X, estimator_name="the model", device_xp=None):
        """Encode X for prediction; checks feature count and names (a device
        array stays on the device when ``device_xp`` is given)."""
        if device_xp is not None and is_device_array(X):
            array = device_matrix(X, device_xp)
            self._check_n_features(array, estimator_name)
            return array
        if is_dataframe(X) and self.feature_names_in_ is not None:
            names = [str(c) for c in X.columns]
            unknown = [n for n in names if n not in set(self.feature_names_in_)]
            missing = [n for n in self.feature_names_in_ if n not in set(names)]
            if unknown or missing:
                raise ValueError(
                    "The feature names should match those that were passed during fit. "
                    f"Feature names unseen at fit time: {unknown}. Feature names seen "
                    f"at fit time, yet now missing: {missing}. Pass the same columns.")
            if names != list(self.feature_names_in_):
                raise ValueError(
                    "The feature names should match those that were passed during fit, "
                    "in the same order. Reorder the columns with "
                    "X[estimator.feature_names_in_].")
        array = self._encode(X)
        self._check_n_features(array, estimator_name)
        return array

    def _check_n_features(self, array, estimator_name):
        if array.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {array.shape[1]} features, but {estimator_name} is expecting "
                f"{self.n_features_in_} features as input. Pass the same columns "
                "as at fit.")

    def _encode(self, X):
        if not is_dataframe(X):
            return as_float_2d(X)
        columns = []
        for i, name in enumerate(X.columns):
            column = X.iloc[:, i]
            if i in self.categories_:
                columns.append(self._category_codes(column, i))
            elif column.dtype.kind in "fiub":
                columns.append(column.to_numpy(dtype=np.float64, na_value=np.nan))
            else:
                raise ValueError(
                    f"Column {name!r} has dtype {column.dtype}, which is neither numeric "
                    "nor 'category'. Convert it with X[col].astype('category') or to numbers.")
        return as_float_2d(np.column_stack(columns) if columns else np.empty((len(X), 0)))

    def _category_codes(self, column, i):
        """Codes in the fit-time category order; unseen categories -> NaN."""
        fitted = self.categories_[i]
        if getattr(column.dtype, "name", "") == "category":
            values = column.astype(object).to_numpy()
        else:
            values = column.to_numpy(dtype=object)
        codes = fitted.get_indexer(values).astype(np.float64)
        codes[codes < 0] = np.nan
        return codes

    def _categorical_mask(self, n_features):
        mask = np.zeros(n_features, dtype=bool)
        mask[list(self.categories_)] = True
        spec = self.categorical_features
        if spec is None:
            return mask
        spec = np.asarray(spec)
        if spec.dtype == bool:
            if spec.shape != (n_features,):
                raise ValueError(f"categorical_features as a boolean mask must have "
                                 f"shape ({n_features},), got {spec.shape}.")
            return mask | spec
        for item in spec.ravel():
            mask[self._feature_index(item, n_features)] = True
        return mask

    def _feature_index(self, item, n_features):
        if isinstance(item, np.generic):
            item = item.item()      # plain int / str, also in error messages
        if isinstance(item, (str, np.str_)):
            if self.feature_names_in_ is None or item not in list(self.feature_names_in_):
                raise ValueError(f"categorical_features names {item!r}, which is not a "
                                 "column of X (names need a pandas DataFrame).")
            return list(self.feature_names_in_).index(item)
        if isinstance(item, numbers.Integral) and -n_features <= int(item) < n_features:
            return int(item)
        raise ValueError(f"categorical_features entry {item!r} is not a feature index "
                         f"in [0, {n_features}) nor a column name.")

