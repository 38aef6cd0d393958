"""Package attributes loaded on first use: a package's public names, each
from the module that defines it, imported when the name is first asked for
(a module ``__getattr__``), so that importing the package loads none of
them."""


def lazy_exports(namespace, exports):
    """(``__getattr__``, ``__dir__``) of the package whose globals are
    ``namespace``: its public names ``exports`` (name -> a function
    returning the module that defines it) load on first use and are then
    kept in ``namespace``."""
    package = namespace["__name__"]

    def __getattr__(name):
        loader = exports.get(name)
        if loader is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = namespace[name] = getattr(loader(), name)
        return value

    def __dir__():
        return sorted(set(namespace) | set(exports))
    return __getattr__, __dir__
