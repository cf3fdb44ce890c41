"""Registry of consensus methods.

Every module in this package that defines a :class:`~ensclust.methods.base.ConsensusMethod` subclass and
decorates it with :func:`register` is discovered automatically on first use.

>>> from ensclust.methods import get_method
>>> get_method("eac-al").fit_predict([[0, 1], [0, 1], [1, 0]], n_clusters=2).tolist()
[0, 0, 1]
"""

from __future__ import annotations

import importlib
import pkgutil

from ensclust.errors import unknown_name_error
from ensclust.methods.base import ConsensusMethod, Param, python_name

__all__ = ["ConsensusMethod", "Param", "register", "get_method", "get_method_class", "list_methods",
           "register_result_cache", "clear_result_caches"]

_REGISTRY: dict[str, type[ConsensusMethod]] = {}
_DISCOVERED = False
_CACHE_CLEARERS: list = []


def register_result_cache(clear) -> None:
    """Register the ``clear()`` of a module's in-process result cache (e.g. AWEC-H/-S sharing one solve)."""
    if clear not in _CACHE_CLEARERS:
        _CACHE_CLEARERS.append(clear)


def clear_result_caches() -> None:
    """Empty every in-process result cache, so that the next fit computes everything (benchmarks)."""
    _discover()
    for clear in _CACHE_CLEARERS:
        clear()


def register(cls: type[ConsensusMethod]) -> type[ConsensusMethod]:
    """Class decorator adding a method to the registry under ``cls.name``."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no registry name")
    if cls.name in _REGISTRY and _REGISTRY[cls.name] is not cls:
        raise ValueError(f"method name '{cls.name}' registered twice")
    _REGISTRY[cls.name] = cls
    return cls


def _discover() -> None:
    global _DISCOVERED
    if _DISCOVERED:
        return
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("_") and info.name != "base":
            importlib.import_module(f"{__name__}.{info.name}")
    _DISCOVERED = True


def list_methods() -> dict[str, type[ConsensusMethod]]:
    """All registered methods, sorted by name."""
    _discover()
    return dict(sorted(_REGISTRY.items()))


def get_method_class(name: str, where: str = "") -> type[ConsensusMethod]:
    """The class registered as ``name`` (case-insensitive); unknown names get a did-you-mean error."""
    _discover()
    key = str(name).lower()
    if key not in _REGISTRY:
        raise unknown_name_error("method", name, _REGISTRY, where)
    return _REGISTRY[key]


def get_method(name: str, **params) -> ConsensusMethod:
    """An estimator for method ``name``; ``params`` (declared or Python names, ``lambda`` or ``lambda_``) are
    validated now, so that a bad value fails before any work."""
    cls = get_method_class(name)
    valid = cls.check_params(params)
    return cls(**{python_name(cls.declared_name(key)): valid[cls.declared_name(key)] for key in params})
