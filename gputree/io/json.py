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

The file's ``digest`` (schema version 5) is the SHA-256 of its content: of
the JSON value without the ``digest`` member, written canonically
(:func:`content_digest`), so a change of any value, key or array byte is
caught on load, while the formatting (whitespace, key order, how a number or
a string is spelt) is free. Every way a file can fail to load raises
:class:`gputree.model.ModelFormatError`. ``save_model`` writes a temporary
file next to the target and renames it over the target once it is complete
and on disk, so the target is always either the old file or the new one.
"""
import base64
import hashlib
import json
import math
import os
import secrets
import stat
import warnings

import numpy as np

from ..model import (FittedModel, ModelFormatError, UnverifiedModelWarning,
                     check_schema_version)

#: dtypes an array in a model file may have
ARRAY_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                "uint64", "float32", "float64")
_TAGS = ("__ndarray__", "__strings__", "__tuple__", "__items__", "__float__")
#: the file's ``digest`` member: this prefix and 64 lower-case hex digits
DIGEST_PREFIX = "sha256:"
#: schema version from which a file must carry a digest
FIRST_DIGEST_VERSION = 5


def save_model(estimator, path):
    """Write a fitted gputree estimator to ``path`` (str or path-like) as
    JSON with its digest, atomically: an interrupted save leaves the file
    that was there (or none), never a part of the new one."""
    data = encode(FittedModel.of(estimator).to_dict())
    digest = content_digest(data)
    data = {"format": data.pop("format"), "schema_version": data.pop("schema_version"),
            "digest": digest, **data}
    text = json.dumps(data, allow_nan=False, separators=(",", ":"))
    write_atomically(path, text.encode("utf-8"))


def load_model(path, device=None):
    """The fitted estimator saved at ``path``; ``device`` overrides the saved
    ``device`` parameter (e.g. "cpu" for a model fitted on a GPU). Raises
    ModelFormatError, naming what is wrong, for any file that is not an
    intact gputree model; warns (UnverifiedModelWarning) for a file written
    before digests (schema version < 5), whose content cannot be verified."""
    with open(path, "rb") as stream:
        raw = stream.read()
    content = verified(parse(raw, path), path)
    try:
        model = FittedModel.from_dict(decode(content))
    except ModelFormatError as exc:
        raise ModelFormatError(f"{path}: {exc}") from exc
    return model.to_estimator(device)


def parse(raw, path="the file"):
    """The JSON value of a model file's bytes; ModelFormatError for bytes
    that are not UTF-8 JSON, for a key given twice in an object, and for
    numbers that are not finite (NaN, Infinity, 1e999) or are too long."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ModelFormatError(f"{path} is not a gputree model file: byte {exc.start} is not "
                               f"UTF-8 text ({exc.reason}); the file is damaged or not "
                               "JSON.") from exc
    try:
        return json.loads(text, object_pairs_hook=_object, parse_float=_finite_float,
                          parse_constant=_no_constant)
    except ModelFormatError as exc:
        raise ModelFormatError(f"{path}: {exc}") from exc
    except (ValueError, RecursionError) as exc:   # JSONDecodeError, an int too long
        raise ModelFormatError(f"{path} is not a gputree model file: invalid or truncated "
                               f"JSON ({exc}).") from exc


def _object(pairs):
    data = dict(pairs)
    if len(data) != len(pairs):
        keys = [k for k, _ in pairs]
        twice = next(k for k in keys if keys.count(k) > 1)
        raise ModelFormatError(f"an object has the key {twice!r:.60} twice.")
    return data


def _finite_float(text):
    value = float(text)
    if not math.isfinite(value):
        raise ModelFormatError(f"the number {text:.40} is out of float64's range.")
    return value


def _no_constant(name):
    raise ModelFormatError(f"{name} is not JSON (non-finite floats are written "
                           "{\"__float__\": \"nan\"}).")


def content_digest(data):
    """``"sha256:<hex>"``: SHA-256 of the JSON value ``data`` (a dict, without
    a ``digest`` key) written canonically: keys sorted, no whitespace, every
    character beyond ASCII as a \\u escape, numbers as Python writes them
    (ints in decimal, floats in their shortest round-trip form):
    ``json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)``."""
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                           allow_nan=False)
    return DIGEST_PREFIX + hashlib.sha256(canonical.encode("ascii")).hexdigest()


def verified(data, path="the file"):
    """``data`` (a parsed model file) without its ``digest``, once the digest
    matches the content: a file of schema version 5 or later must carry one;
    an older file loads with an UnverifiedModelWarning (a newer one is
    refused before: its digest may be computed otherwise)."""
    if not isinstance(data, dict) or data.get("format") != "gputree-model":
        return data                      # from_dict says what it should be
    content = {k: v for k, v in data.items() if k != "digest"}
    try:
        version = check_schema_version(data.get("schema_version"))
    except ModelFormatError as exc:
        raise ModelFormatError(f"{path}: {exc}") from exc
    if "digest" not in data:
        if version >= FIRST_DIGEST_VERSION:
            raise ModelFormatError(f"{path} has no 'digest', which schema_version {version} "
                                   "requires: the file is damaged or was edited.")
        warnings.warn(f"{path} has no digest (schema_version {version!r:.20}, written by a "
                      "gputree before version 5): its content cannot be verified. Save it "
                      "again to add one.", UnverifiedModelWarning, stacklevel=3)
        return content
    saved = data["digest"]
    if not isinstance(saved, str) or not saved.startswith(DIGEST_PREFIX):
        raise ModelFormatError(f"{path}: 'digest' must be '{DIGEST_PREFIX}' and 64 hex digits, "
                               f"got {saved!r:.80}.")
    if saved != content_digest(content):
        raise ModelFormatError(f"{path} is damaged: its content does not match its digest "
                               "(SHA-256), so some value changed after it was written; use "
                               "an intact copy or save the model again.")
    return content


def write_atomically(path, data):
    """Write the bytes ``data`` to ``path``: into a new file in the same
    folder, flushed to disk, then renamed over ``path`` (atomic on POSIX and
    Windows); on any failure the new file is removed and ``path`` is as it
    was. A symlink ``path`` has its target replaced; the file keeps the
    permissions of the one it replaces (else the default, after umask)."""
    target = os.path.realpath(os.fspath(path))
    folder, name = os.path.split(target)
    temporary = os.path.join(folder, f".{name}.{secrets.token_hex(6)}.tmp")
    try:
        with _create_new(temporary) as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        if os.path.exists(target):
            os.chmod(temporary, stat.S_IMODE(os.stat(target).st_mode))
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
    _sync_folder(folder)


def _create_new(path):
    """A binary stream on a file created at ``path`` (which must not exist),
    with the permissions ``open`` gives a new file."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    return open(os.open(path, flags, 0o666), "wb")


def _sync_folder(folder):
    """Flush the rename to disk (POSIX; a no-op where folders cannot be opened)."""
    try:
        handle = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(handle)
    except OSError:
        pass
    finally:
        os.close(handle)


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
