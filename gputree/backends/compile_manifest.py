"""The compile manifest (``prewarm_manifest.json``, package data): per
profile of a first fit, the kernels it uses, each as an address and a
numba signature, read once per process and parsed, never evaluated.

An address is ``module:qualname`` (a module's kernel, found with
``importlib`` and ``getattr``) or ``module:factory(args)`` (the call of a
``kernel_cache.kernel_factory`` that makes it, its arguments Python
literals); the module is one of gputree's. A signature is the ``repr`` of
a tuple of numba types, read by a small grammar: a type's name in
``numba.types`` (``int64``, ``float32``, ``bool``, ...) or one of
:data:`CONSTRUCTORS` called with types and literals
(``Array(int64, 2, 'C', False, aligned=True)``); it must read back as
itself. Anything else (code, an unknown name, a broken file) is a
:class:`ManifestError` that names what it read: the file is checked when
read (its form and every address), a signature when parsed (a fit
parses only the two it looks up).
"""
import ast
import contextlib
import functools
import importlib
import json
import os
import re

MANIFEST_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "prewarm_manifest.json")
#: the numba type constructors a signature may call
CONSTRUCTORS = ("Array", "UniTuple")
#: how the manifest is made again
_REMAKE = "write it again with `python -m gputree.estimators.compile_profiles`"
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_ADDRESS = re.compile(rf"(gputree(?:\.{_NAME})*):({_NAME}(?:\.{_NAME})*)(\(.*\))?", re.DOTALL)
#: the manifest of this process (read once): {"profiles": dict} or {"error": ManifestError}
_state = {}


class ManifestError(ValueError):
    """A manifest, address or signature that does not read as the module says."""


# ------------------------------------------------------------- the file


def manifest():
    """{profile name: {"estimator", "params", "kernels": [[address, signature]],
    "seconds": [each kernel's compile seconds, as recorded]}} of
    :data:`MANIFEST_FILE`, read once per process ({} without the file);
    raises :class:`ManifestError` where it is malformed. Not to be changed
    by the caller."""
    if not _state:
        try:
            _state["profiles"] = read_manifest(MANIFEST_FILE)
        except ManifestError as error:
            _state["error"] = error
    if "error" in _state:
        raise _state["error"]
    return _state["profiles"]


def read_manifest(path):
    """The manifest at ``path``, checked (:func:`manifest`); {} where there
    is no file."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        return {}
    except OSError as error:
        raise ManifestError(f"{path}: cannot be read ({error})") from None
    try:
        profiles = json.loads(text)
    except ValueError as error:
        raise ManifestError(f"{path}: not JSON ({error}); {_REMAKE}.") from None
    if not isinstance(profiles, dict):
        raise ManifestError(f"{path}: not an object of profiles; {_REMAKE}.")
    for name, entry in profiles.items():
        with about(name, path):
            _check_profile(entry)
    return profiles


def write_manifest(profiles):
    """Write ``profiles`` (as :func:`manifest` returns them) to
    :data:`MANIFEST_FILE`; this process reads it again."""
    for entry in profiles.values():
        _check_profile(entry)
    with open(MANIFEST_FILE, "w", encoding="utf-8") as handle:
        json.dump(profiles, handle, indent=1)
        handle.write("\n")
    _state.clear()


@contextlib.contextmanager
def about(profile, path=None):
    """A ManifestError raised in the block names the file (``path``, by
    default :data:`MANIFEST_FILE`) and ``profile``, and how to remake it."""
    try:
        yield
    except ManifestError as error:
        raise ManifestError(f"{path or MANIFEST_FILE}: profile {profile!r}: {error}; "
                            f"{_REMAKE}.") from None


def _check_profile(entry):
    """Raise ManifestError where ``entry`` is not a profile (its kernels'
    addresses parsed)."""
    if not (isinstance(entry, dict) and isinstance(entry.get("estimator"), str)
            and isinstance(entry.get("params"), dict) and isinstance(entry.get("kernels"), list)):
        raise ManifestError("expected an object with an estimator's name, its params and "
                            "a list of kernels")
    for i, kernel in enumerate(entry["kernels"]):
        if not (isinstance(kernel, list) and len(kernel) == 2
                and all(isinstance(part, str) for part in kernel)):
            raise ManifestError(f"kernel {i}: expected [address, signature], got {kernel!r}")
        try:
            parse_address(kernel[0])
        except ManifestError as error:
            raise ManifestError(f"kernel {i}: {error}") from None
    seconds = entry.get("seconds")
    if seconds is not None and not (
            isinstance(seconds, list) and len(seconds) == len(entry["kernels"])
            and all(isinstance(s, (int, float)) and not isinstance(s, bool) for s in seconds)):
        raise ManifestError("seconds: expected one number per kernel")


# ------------------------------------------------------------- addresses


def address_of(py_func):
    """Where a kernel's Python function is found again in another process:
    the factory call that made it (``kernel_cache.kernel_factory``) or its
    module and name."""
    recipe = getattr(py_func, "_gputree_recipe", None)
    return recipe or f"{py_func.__module__}:{py_func.__qualname__}"


def parse_address(address):
    """(module, [names of the qualified name], the factory's arguments
    (a tuple) or None) of an address; ManifestError where it is none."""
    match = _ADDRESS.fullmatch(address)
    if match is None:
        raise ManifestError(f"address {address!r}: expected 'gputree.module:name' or "
                            "'gputree.module:factory(literal arguments)'")
    module, qualname, call = match.groups()
    names = qualname.split(".")
    if any(name.startswith("__") for name in names):
        raise ManifestError(f"address {address!r}: names with two leading underscores "
                            "are not kernels")
    args = None
    if call is not None:
        try:
            args = ast.literal_eval(call)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            args = None
        if not isinstance(args, tuple):
            raise ManifestError(f"address {address!r}: a factory's arguments must be "
                                "Python literals (the repr of a tuple)")
    return module, names, args


def resolve(address):
    """The numba dispatcher at ``address`` (a threaded kernel's compiled one)."""
    from numba.core.dispatcher import Dispatcher
    module, names, args = parse_address(address)
    found = importlib.import_module(module)
    for name in names:
        found = getattr(found, name, None)
        if found is None:
            raise ManifestError(f"address {address!r}: {module} has no {'.'.join(names)}")
    if args is not None:
        if not getattr(found, "makes_kernels", False):
            raise ManifestError(f"address {address!r}: {'.'.join(names)} is not a "
                                "kernel factory")
        found = found(*args)
    kernel = getattr(found, "compiled", found)
    if not isinstance(kernel, Dispatcher):
        raise ManifestError(f"address {address!r}: not a numba kernel")
    return kernel


# ------------------------------------------------------------- signatures


@functools.lru_cache(maxsize=None)
def parse_signature(text):
    """numba argument types (a tuple) from their repr
    (``repr(tuple_of_types)``), by the module's grammar."""
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        raise ManifestError(f"signature {text!r}: not a tuple of numba types") from None
    if not isinstance(tree.body, ast.Tuple):
        raise ManifestError(f"signature {text!r}: not a tuple of numba types")
    signature = tuple(_numba_type(node, text) for node in tree.body.elts)
    if repr(signature) != text:
        raise ManifestError(f"signature {text!r}: reads as {signature!r}")
    return signature


def _numba_type(node, text):
    """The numba type of an expression node: a name in numba.types or a
    constructor of :data:`CONSTRUCTORS` called with types and literals."""
    from numba.core import types
    if isinstance(node, ast.Name):
        found = getattr(types, node.id, None) if not node.id.startswith("_") else None
        if isinstance(found, types.Type):
            return found
        raise ManifestError(f"signature {text!r}: {node.id!r} is not a numba type")
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in CONSTRUCTORS):
        args = [_argument(arg, text) for arg in node.args]
        kwargs = {kw.arg: _argument(kw.value, text) for kw in node.keywords
                  if kw.arg is not None}
        if len(kwargs) != len(node.keywords):
            raise ManifestError(f"signature {text!r}: ** in a type")
        try:
            return getattr(types, node.func.id)(*args, **kwargs)
        except (TypeError, ValueError, KeyError, AssertionError) as error:
            raise ManifestError(f"signature {text!r}: {error}") from None
    raise ManifestError(f"signature {text!r}: {ast.unparse(node)!r} is neither a numba "
                        f"type's name nor a call of {', '.join(CONSTRUCTORS)}")


def _argument(node, text):
    """A constructor's argument: a numba type or an int, str or bool literal."""
    if isinstance(node, ast.Constant) and type(node.value) in (int, str, bool):
        return node.value
    return _numba_type(node, text)
