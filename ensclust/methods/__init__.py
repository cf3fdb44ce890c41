"""Registry of consensus methods, built-in and plug-in.

Every module in this package that defines a :class:`~ensclust.methods.base.ConsensusMethod` subclass and
decorates it with :func:`register` is discovered automatically on first use.

>>> from ensclust.methods import get_method
>>> get_method("eac-al").fit_predict([[0, 1], [0, 1], [1, 0]], n_clusters=2).tolist()
[0, 0, 1]

A user's method needs no change to ensclust. It is a :class:`ConsensusMethod` subclass (declare ``params``,
implement ``_fit``), named wherever a method name is accepted (configs, ``ensclust consensus``,
``ensclust sweep``, ``ensclust methods``) in one of three ways:

* ``path/to/file.py:ClassName``: a class in a Python file (a relative path is relative to the working
  directory);
* ``package.module:ClassName``: a class in an importable module;
* ``name``: an entry point of an installed distribution in the group ``ensclust.methods``
  (``[project.entry-points."ensclust.methods"] my-method = "my_package.module:ClassName"``).

:func:`get_method_class` is the one place where names are resolved; a plug-in that cannot be used (missing
file, import error, no such class, not a ConsensusMethod) raises a one-line :class:`~ensclust.errors.UserError`.
A plug-in's ``name`` (the string it was loaded by when the class does not set one) must not be a built-in
method's name; once loaded, the plug-in is found by that name as well.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import importlib.util
import pkgutil
import re
import sys
from pathlib import Path

from ensclust.errors import UserError, did_you_mean, unknown_name_error
from ensclust.methods.base import ConsensusMethod, Param, python_name

__all__ = ["ConsensusMethod", "Param", "register", "get_method", "get_method_class", "list_methods",
           "method_names", "method_source", "is_plugin_spec", "ENTRY_POINT_GROUP"]

ENTRY_POINT_GROUP = "ensclust.methods"

_REGISTRY: dict[str, type[ConsensusMethod]] = {}
_DISCOVERED = False
#: plug-ins loaded in this process, by the name they declare (so that ``get_method(cls.name)`` finds them)
_PLUGINS: dict[str, type[ConsensusMethod]] = {}
#: where each loaded plug-in came from, shown by ``ensclust methods``
_SOURCES: dict[type, str] = {}


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


def is_plugin_spec(name: str) -> bool:
    """True for ``module:Class`` and ``path/to/file.py:Class`` (a method named by where its class lives)."""
    return ":" in str(name)


def _entry_points() -> dict:
    """The installed entry points of the group ``ensclust.methods``, by lower-case name (not loaded)."""
    return {ep.name.lower(): ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}


def method_names() -> list[str]:
    """Built-in and entry-point method names, sorted, without importing any plug-in."""
    _discover()
    return sorted(set(_REGISTRY) | set(_entry_points()))


def list_methods() -> dict[str, type[ConsensusMethod]]:
    """All methods, built-in and installed entry-point plug-ins, sorted by name."""
    _discover()
    out = dict(_REGISTRY)
    for key, ep in _entry_points().items():
        out[key] = _load_entry_point(ep)
    return dict(sorted(out.items()))


def get_method_class(name: str, where: str = "") -> type[ConsensusMethod]:
    """The class of method ``name``: built-in or entry point (case-insensitive), ``module:Class`` or
    ``path/to/file.py:Class``. Unknown names get a did-you-mean error, unusable plug-ins a one-line error."""
    _discover()
    name = str(name)
    if is_plugin_spec(name):
        return _load_spec(name, where)
    key = name.lower()
    if key in _REGISTRY:
        return _REGISTRY[key]
    if key in _PLUGINS:
        return _PLUGINS[key]
    entry_points = _entry_points()
    if key in entry_points:
        return _load_entry_point(entry_points[key], where)
    raise unknown_name_error("method", name, set(_REGISTRY) | set(entry_points), where)


def solve_group(name: str) -> str | None:
    """The ``solve_group`` of method ``name`` (methods of one group share a deterministic solve, e.g. RSEC-H and
    RSEC-Z), or None for a method without one, a pseudo-method (km-avg) or an unregistered name."""
    try:
        return get_method_class(name).solve_group
    except UserError:
        return None


def get_method(name: str, **params) -> ConsensusMethod:
    """An estimator for method ``name``; ``params`` (declared or Python names, ``lambda`` or ``lambda_``) are
    validated now, so that a bad value fails before any work."""
    cls = get_method_class(name)
    valid = cls.check_params(params)
    return cls(**{python_name(cls.declared_name(key)): valid[cls.declared_name(key)] for key in params})


def method_source(cls: type) -> str:
    """Where a method comes from: ``built-in``, ``file <path>``, ``module <name>`` or ``entry point ...``."""
    return _SOURCES.get(cls, "built-in" if cls in _REGISTRY.values() else f"module {cls.__module__}")


# -- plug-ins ------------------------------------------------------------------------------------------
def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _load_spec(spec: str, where: str) -> type[ConsensusMethod]:
    prefix = f"{where}: " if where else ""
    target, _, attr = spec.rpartition(":")
    if not target or not attr.isidentifier():
        raise UserError(f"{prefix}plug-in method '{spec}' must be written module:Class or path/to/file.py:Class")
    if target.endswith(".py") or "/" in target or "\\" in target:
        path = Path(target).expanduser()
        if not path.is_file():
            raise UserError(f"{prefix}plug-in file '{target}' not found (method '{spec}'; a relative path is "
                            f"relative to the working directory {Path.cwd()})")
        module = _import_file(path.resolve(), spec, prefix)
        source = f"file {path.resolve()}"
    else:
        try:
            module = importlib.import_module(target)
        except Exception as exc:
            raise UserError(f"{prefix}cannot import plug-in module '{target}' (method '{spec}'): "
                            f"{_one_line(exc)}") from None
        source = f"module {target}"
    cls = getattr(module, attr, None)
    if cls is None:
        found = sorted(k for k, v in vars(module).items() if isinstance(v, type) and issubclass(v, ConsensusMethod)
                       and v is not ConsensusMethod)
        listing = f"; its methods: {', '.join(found)}" if found else "; it defines no ConsensusMethod subclass"
        raise UserError(f"{prefix}plug-in '{target}' has no class '{attr}'{did_you_mean(attr, found)}{listing}")
    return _accept(cls, spec, source, prefix)


def _import_file(path: Path, spec: str, prefix: str):
    """Import a plug-in file once per process, as a module named after its path (so classes pickle)."""
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:10]
    module_name = f"ensclust_plugin_{re.sub(r'[^0-9a-zA-Z_]', '_', path.stem)}_{digest}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    module_spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_name] = module
    try:
        module_spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[module_name]
        raise UserError(f"{prefix}cannot load plug-in file '{path}' (method '{spec}'): {_one_line(exc)}") from None
    return module


def _load_entry_point(ep, where: str = "") -> type[ConsensusMethod]:
    prefix = f"{where}: " if where else ""
    dist = getattr(ep, "dist", None)
    origin = f"distribution {dist.name} {dist.version}" if dist is not None else "no distribution"
    source = f"entry point {ep.name} = {ep.value} ({origin})"
    if ep.name.lower() in _REGISTRY:
        raise UserError(f"{prefix}plug-in entry point '{ep.name}' ({origin}) has the name of a built-in method")
    try:
        cls = ep.load()
    except Exception as exc:
        raise UserError(f"{prefix}cannot load plug-in method '{ep.name}' (entry point {ep.value}, {origin}): "
                        f"{_one_line(exc)}") from None
    cls = _accept(cls, ep.name.lower(), source, prefix)
    _PLUGINS[ep.name.lower()] = cls
    return cls


def _accept(cls, name: str, source: str, prefix: str) -> type[ConsensusMethod]:
    """Check that a loaded object is a usable method; remember its name and source."""
    if not (isinstance(cls, type) and issubclass(cls, ConsensusMethod)):
        raise UserError(f"{prefix}plug-in '{name}' is not a consensus method: {getattr(cls, '__name__', cls)!s} "
                        "must be a class that subclasses ensclust.methods.ConsensusMethod")
    if cls._fit is ConsensusMethod._fit:
        raise UserError(f"{prefix}plug-in '{name}' ({cls.__name__}) does not implement _fit(members, n_clusters, "
                        "X, rng)")
    if not cls.name:
        cls.name = name
    key = cls.name.lower()
    if _REGISTRY.get(key, cls) is not cls:
        raise UserError(f"{prefix}plug-in '{name}' ({cls.__name__}) declares name '{cls.name}', which is a "
                        "built-in method; choose another name")
    _PLUGINS[key] = cls
    _SOURCES[cls] = source
    return cls
