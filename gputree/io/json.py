"""The versioned JSON model file: ``save_model(estimator, path)`` and
``load_model(path)`` (layout in docs/model_schema.md).

The file is plain JSON; loading never executes code. Values that JSON cannot
hold exactly are tagged objects with one key:

* ``{"__ndarray__": {"dtype": "float64", "shape": [...], "base64": "..."}}``:
  a numeric or bool array, its little-endian bytes in base64 (bit-exact,
  NaN and infinities included); the byte count is checked against the shape.
* ``{"__strings__": {"dtype": "object" | "<U5", "values": [...]}}``: an array of str.
* ``{"__tuple__": [...]}``, ``{"__items__": [[key, value], ...]}`` (a dict
  whose keys are not all str), ``{"__float__": "nan" | "inf" | "-inf"}``.
"""
import base64
import json
import math

import numpy as np

from ..model import FittedModel, ModelFormatError

#: dtypes an array in a model file may have
ARRAY_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                "uint64", "float32", "float64")
_TAGS = ("__ndarray__", "__strings__", "__tuple__", "__items__", "__float__")


def save_model(estimator, path):
    """Write a fitted gputree estimator to ``path`` (str or path-like) as JSON."""
    text = json.dumps(encode(FittedModel.of(estimator).to_dict()), allow_nan=False,
                      separators=(",", ":"))
    with open(path, "w", encoding="utf-8") as stream:
        stream.write(text)


def load_model(path, device=None):
    """The fitted estimator saved at ``path``; ``device`` overrides the saved
    ``device`` parameter (e.g. "cpu" for a model fitted on a GPU)."""
    with open(path, "r", encoding="utf-8") as stream:
        text = stream.read()
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ModelFormatError(f"{path} is not a gputree model file: invalid or truncated "
                               f"JSON ({exc}).") from exc
    return FittedModel.from_dict(decode(data)).to_estimator(device)


def encode(value):
    """JSON-ready copy of plain containers holding numpy arrays and scalars."""
    if isinstance(value, np.ndarray):
        return _encode_array(value)
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value) and not any(k in _TAGS for k in value):
            return {k: encode(v) for k, v in value.items()}
        return {"__items__": [[encode(k), encode(v)] for k, v in value.items()]}
    if isinstance(value, tuple):
        return {"__tuple__": [encode(v) for v in value]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, np.random.RandomState):
        return None   # a generator's state is not saved: refitting draws afresh
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else {"__float__": repr(value)}
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"cannot save a {type(value).__name__} ({value!r:.60}) in a model file; "
                    "set that parameter to a str, number, list or dict before saving.")


def _encode_array(array):
    if array.dtype.kind in "OUS" and all(isinstance(v, str) for v in array.ravel()):
        if array.ndim != 1:
            raise TypeError("only 1-D arrays of str can be saved.")
        dtype = "object" if array.dtype == object else array.dtype.str
        return {"__strings__": {"dtype": dtype, "values": [str(v) for v in array]}}
    if array.dtype.name not in ARRAY_DTYPES:
        raise TypeError(f"cannot save an array of dtype {array.dtype} in a model file.")
    raw = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()
    return {"__ndarray__": {"dtype": array.dtype.name, "shape": list(array.shape),
                            "base64": base64.b64encode(raw).decode("ascii")}}


def decode(value):
    """Inverse of :func:`encode`; raises ModelFormatError on a malformed tag."""
    if isinstance(value, list):
        return [decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    tags = [k for k in value if k.startswith("__") and k.endswith("__")]
    if not tags:
        return {k: decode(v) for k, v in value.items()}
    if len(value) != 1 or tags[0] not in _TAGS:
        raise ModelFormatError(f"unknown tagged value with keys {sorted(value)[:4]}.")
    tag, body = tags[0], value[tags[0]]
    return _DECODERS[tag](body)


def _decode_array(body):
    if not isinstance(body, dict) or set(body) != {"dtype", "shape", "base64"}:
        raise ModelFormatError("an __ndarray__ needs exactly dtype, shape and base64.")
    dtype, shape = body["dtype"], body["shape"]
    if dtype not in ARRAY_DTYPES:
        raise ModelFormatError(f"array dtype {dtype!r} is not one of {ARRAY_DTYPES}.")
    if not isinstance(shape, list) or not all(isinstance(n, int) and n >= 0 for n in shape):
        raise ModelFormatError(f"array shape {shape!r:.60} must be a list of ints >= 0.")
    try:
        raw = base64.b64decode(body["base64"], validate=True)
    except (ValueError, TypeError) as exc:
        raise ModelFormatError(f"array data is not valid base64 ({exc}).") from exc
    dtype = np.dtype(dtype).newbyteorder("<")
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(raw) != expected:
        raise ModelFormatError(f"array of shape {tuple(shape)} and dtype {dtype.name} needs "
                               f"{expected} bytes, the file holds {len(raw)} (truncated?).")
    return np.frombuffer(raw, dtype=dtype).reshape(shape).astype(dtype.newbyteorder("="))


def _decode_strings(body):
    ok = isinstance(body, dict) and isinstance(body.get("values"), list) and all(
        isinstance(v, str) for v in body["values"])
    if not ok or not isinstance(body.get("dtype"), str) or not (
            body["dtype"] == "object" or body["dtype"].lstrip("<>=|").startswith("U")):
        raise ModelFormatError("a __strings__ value needs a dtype ('object' or '<U...') and "
                               "a list of str.")
    return np.array(body["values"], dtype=object if body["dtype"] == "object" else str)


def _decode_items(body):
    if not isinstance(body, list) or not all(isinstance(p, list) and len(p) == 2 for p in body):
        raise ModelFormatError("an __items__ value must be a list of [key, value] pairs.")
    return {_hashable(decode(k)): decode(v) for k, v in body}


def _hashable(key):
    if isinstance(key, (list, dict, np.ndarray)):
        raise ModelFormatError(f"a dict key must be a str or number, got {key!r:.40}.")
    return key


def _decode_float(body):
    if body not in ("nan", "inf", "-inf"):
        raise ModelFormatError(f"__float__ must be 'nan', 'inf' or '-inf', got {body!r:.20}.")
    return float(body)


def _decode_tuple(body):
    if not isinstance(body, list):
        raise ModelFormatError("a __tuple__ value must be a list.")
    return tuple(decode(v) for v in body)


_DECODERS = {"__ndarray__": _decode_array, "__strings__": _decode_strings,
             "__tuple__": _decode_tuple, "__items__": _decode_items, "__float__": _decode_float}
