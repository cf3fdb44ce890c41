"""The consensus-method API: parameter declarations, validation in one place, and the estimator base class.

A method is a scikit-learn estimator (``BaseEstimator`` + ``ClusterMixin``) over a label matrix::

    from ensclust.methods import get_method
    labels = get_method("eac-al").fit_predict(members, n_clusters=c, random_state=seed)

Subclasses declare ``name``, ``params`` (a dict of :class:`Param`), optionally ``needs_features = True`` and
``accepts_missing = True`` with ``missing_doc`` (incomplete ensembles: -1 entries reach ``_fit``; the others
never see one), and implement ``_fit(members, n_clusters, X, rng)`` returning the labels. ``_fit`` may set
``self.diagnostics_`` (e.g. ``objective``, ``n_iter``, ``converged``) and ``self.consensus_matrix_``.

The ``params`` table is the single declaration of every parameter (default, type, bounds, doc, source): the
keyword ``__init__`` is generated from it (scikit-learn reads its signature), parameters are plain attributes
set verbatim, and :meth:`ConsensusMethod.check_params` validates them when :meth:`ConsensusMethod.fit` starts.
A declared name that is a Python keyword (``lambda``) is spelled with a trailing underscore in Python
(``lambda_``); configs and the command line use the declared name, and both spellings are accepted.
"""

from __future__ import annotations

import inspect
import keyword
import math
import numbers
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin

from ensclust.core.labels import check_members, has_missing, missing_mask, relabel
from ensclust.errors import UserError, unknown_name_error
from ensclust.rng import check_random_state

_TYPES = {"float": float, "int": int, "str": str, "bool": bool}
#: list-valued types: a list of the element type (a comma-separated string is accepted too, e.g. "0.9,0.8")
_LIST_TYPES = {"list[float]": "float", "list[int]": "int"}


def python_name(name: str) -> str:
    """The Python spelling of a declared parameter name: ``lambda`` -> ``lambda_``, others unchanged."""
    return name + "_" if keyword.iskeyword(name) else name


@dataclass(frozen=True)
class Param:
    """Declaration of one method parameter.

    Parameters
    ----------
    default : the default value (a tuple for the list types: scikit-learn wants immutable defaults).
    type : "float", "int", "str", "bool", "list[float]", "list[int]" or "memory" (a result cache: None, a
        folder path or an object with a ``cache(func)`` method, see :mod:`ensclust.core.cache`).
    low, high : optional bounds (of every element, for the list types); ``low_open`` / ``high_open`` make
        them strict.
    choices : allowed values for a categorical parameter.
    doc : one line saying what it does.
    source : where the default comes from (paper section, authors' code, spec), shown by ``ensclust methods``.
    """

    default: Any
    type: str = "float"
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple | None = None
    doc: str = ""
    source: str = ""
    allow_none: bool = False

    def validate(self, name: str, value, where: str = ""):
        """Return ``value`` converted to the declared type, or raise a one-line :class:`UserError`."""
        if value is None and (self.allow_none or self.default is None):
            return None
        if self.type == "memory":
            # a cache handle, passed through as is (ensclust.core.cache): a folder path, a joblib.Memory or
            # any object with a ``cache(func)`` method
            if isinstance(value, str) or callable(getattr(value, "cache", None)):
                return value
            raise UserError(f"{where + ': ' if where else ''}parameter '{name}' must be None, a folder path or "
                            f"an object with a cache() method (joblib.Memory, ensclust.core.cache.SolveCache), "
                            f"got {value!r}")
        if self.type not in _LIST_TYPES:
            return self._convert(name, value, where, _TYPES[self.type])
        items = value
        if isinstance(value, str):
            items = [v for v in value.replace(";", ",").split(",") if v.strip()]
        elif isinstance(value, np.ndarray):
            items = value.tolist()
        if not isinstance(items, (list, tuple)):
            raise self._type_error(name, value, where)
        if not items:
            raise UserError(f"{where + ': ' if where else ''}parameter '{name}' is empty")
        return [self._convert(name, v, where, _TYPES[_LIST_TYPES[self.type]]) for v in items]

    def _type_error(self, name: str, value, where: str) -> UserError:
        prefix = f"{where}: " if where else ""
        return UserError(f"{prefix}parameter '{name}' must be of type {self.type}, got {value!r}")

    def _convert(self, name: str, value, where: str, kind: type):
        """One value converted to ``kind`` and checked against the choices and bounds."""
        prefix = f"{where}: " if where else ""
        try:
            if kind is bool:
                if isinstance(value, str):
                    if value.lower() not in ("true", "false", "1", "0", "yes", "no", "on", "off"):
                        raise ValueError
                    value = value.lower() in ("true", "1", "yes", "on")
                else:
                    value = bool(value)
            elif kind is int:
                f = float(value)
                if not f.is_integer():
                    raise ValueError
                value = int(f)
            elif kind is float:
                value = float(value)
                if math.isnan(value):
                    raise ValueError
            else:
                value = str(value)
        except (TypeError, ValueError):
            raise self._type_error(name, value, where) from None
        if self.choices is not None and value not in self.choices:
            raise unknown_name_error(f"value for parameter '{name}'", value, [str(c) for c in self.choices], where)
        if self.low is not None and (value < self.low or (self.low_open and value == self.low)):
            op = ">" if self.low_open else ">="
            raise UserError(f"{prefix}parameter '{name}'={value} is out of range: must be {op} {self.low}")
        if self.high is not None and (value > self.high or (self.high_open and value == self.high)):
            op = "<" if self.high_open else "<="
            raise UserError(f"{prefix}parameter '{name}'={value} is out of range: must be {op} {self.high}")
        return value

    def describe(self) -> str:
        parts = [f"{self.type}, default {self.default!r}"]
        if self.choices:
            parts.append("one of " + "|".join(map(str, self.choices)))
        if self.low is not None or self.high is not None:
            lo = "(" if self.low_open else "["
            hi = ")" if self.high_open else "]"
            parts.append(f"range {lo}{self.low if self.low is not None else '-inf'}, "
                         f"{self.high if self.high is not None else 'inf'}{hi}")
        return "; ".join(parts)


@dataclass
class FitResult:
    """What one fit produced (used by the runner)."""

    labels: np.ndarray
    diagnostics: dict = field(default_factory=dict)


class ConsensusMethod(ClusterMixin, BaseEstimator):
    """Base class of all consensus methods: a scikit-learn estimator over an n x m label matrix.

    The keyword ``__init__`` of a subclass is generated from its ``params`` table (a subclass that writes
    its own ``__init__`` must take exactly those parameters, see :meth:`__init_subclass__`).
    """

    name: ClassVar[str] = ""
    params: ClassVar[dict[str, Param]] = {}
    needs_features: ClassVar[bool] = False
    #: True when the result depends on ``random_state`` (k-means, METIS seeds, random starts, ...).
    randomized: ClassVar[bool] = False
    #: True when the method may return fewer (or more) than ``n_clusters`` clusters by design.
    may_return_other_k: ClassVar[bool] = False
    #: True when the method handles missing labels (incomplete ensembles: -1 in the relabelled matrix, see
    #: :data:`ensclust.core.labels.MISSING_LABEL`); ``missing_doc`` says how. Set only where a test on
    #: planted data with 10-50 % missing entries checks it (tests/test_missing.py).
    accepts_missing: ClassVar[bool] = False
    missing_doc: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    #: Raised by one whenever a change of the method's code changes its labels for the same inputs and seed.
    #: It enters the fingerprint of every experiment cell of the method (ensclust.experiment.plan), so stored
    #: results of an older revision are recomputed instead of being reused as if the current code made them.
    revision: ClassVar[int] = 0
    #: Methods with the same ``solve_group`` run one deterministic solve and differ only after it (e.g. RSEC-H
    #: and RSEC-Z); given the same ``memory`` cache, with the same ensemble and parameters, the second fit reuses
    #: the first's solve. The runner's cost estimate prices such a pair once.
    solve_group: ClassVar[str | None] = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        signature = _init_signature(cls.params)
        if "__init__" not in cls.__dict__:
            cls.__init__ = _make_init(cls, signature)
        elif list(inspect.signature(cls.__init__).parameters) != list(signature.parameters):
            raise TypeError(f"{cls.__qualname__}.__init__ must take the parameters of its params table, "
                            f"{signature}, got {inspect.signature(cls.__init__)}")

    # -- parameters --------------------------------------------------------------------------------
    @classmethod
    def declared_name(cls, key: str) -> str:
        """The ``params`` key of a parameter given by its declared or Python name (``lambda_`` -> ``lambda``)."""
        if key not in cls.params and key.endswith("_") and key[:-1] in cls.params \
                and python_name(key[:-1]) == key:
            return key[:-1]
        return key

    @classmethod
    def _validate_params(cls, given: dict, where: str = "") -> dict:
        values = {k: p.default for k, p in cls.params.items()}
        seen = set()
        for key, value in given.items():
            declared = cls.declared_name(key)
            if declared not in cls.params:
                hint = list(cls.params) or ["(this method has no parameters)"]
                raise unknown_name_error(f"parameter for method '{cls.name}'", key, hint, where)
            if declared in seen:
                raise UserError(f"{where + ': ' if where else ''}parameter '{declared}' is given twice "
                                f"(as '{declared}' and '{python_name(declared)}')")
            seen.add(declared)
            values[declared] = value
        values = {k: cls.params[k].validate(k, v, where) for k, v in values.items()}
        cls._check_params(values, where)
        return values

    @classmethod
    def _check_params(cls, values: dict, where: str = "") -> None:
        """Cross-parameter checks; override when parameters constrain each other."""

    @classmethod
    def check_params(cls, params: dict, where: str = "") -> dict:
        """Validate parameters (declared or Python names) and return all of them, defaults filled in, under
        their declared names, converted to the declared types; raises a one-line :class:`UserError`.

        The one place where parameters are validated: config validation, ``get_method`` and :meth:`fit`.
        """
        return cls._validate_params(params, where)

    def set_params(self, **params):
        """Set parameters (Python or declared names: ``lambda_`` or ``lambda``); validated at fit time."""
        return super().set_params(**{python_name(self.declared_name(k)): v for k, v in params.items()})

    @property
    def _params(self) -> dict:
        """The current parameters validated, under their declared names (``self._params["lambda"]``)."""
        return self.check_params({name: getattr(self, python_name(name)) for name in self.params})

    @contextmanager
    def _validated_params(self):
        """Validate the parameters (a bad value raises here); while the block runs, the attributes hold the
        validated values (e.g. ``theta=1`` as ``1.0``). The values the user set are restored afterwards, so
        that ``get_params`` and ``clone`` keep seeing them verbatim."""
        given = {name: getattr(self, python_name(name)) for name in self.params}
        for name, value in self._params.items():
            setattr(self, python_name(name), value)
        try:
            yield
        finally:
            for name, value in given.items():
                setattr(self, python_name(name), value)

    def __sklearn_is_fitted__(self) -> bool:
        # scikit-learn's default test (any attribute ending in "_") would count the parameter lambda_
        return hasattr(self, "labels_")

    # -- fitting -----------------------------------------------------------------------------------
    def fit(self, members, y=None, *, n_clusters=None, X=None, random_state=None, missing=None):
        """Compute the consensus partition of ``members`` (n x m) into ``n_clusters`` clusters.

        Parameters
        ----------
        members : (n, m) array of integer labels; column q is base clustering q (any label values).
        y : ignored (scikit-learn convention). An integer here is read as ``n_clusters``, so that the
            positional form ``fit(members, n_clusters)`` keeps working.
        n_clusters : number of consensus clusters (required).
        X : (n, d) features, required by methods with ``needs_features = True`` (ignored otherwise).
        random_state : None, int or numpy Generator; all randomness of the fit comes from it.
        missing : the label value that marks a point a member did not label (e.g. -1); NaN in a float
            ``members`` is always missing. Only methods with ``accepts_missing`` take missing entries; the
            others raise a one-line :class:`UserError` naming those that do.
        """
        if isinstance(y, numbers.Integral) and not isinstance(y, bool):
            if n_clusters is not None:
                raise TypeError("fit() got the number of clusters twice (as y and as n_clusters)")
            n_clusters = y
        if n_clusters is None:
            raise UserError(f"method '{self.name}': the number of clusters is required "
                            "(fit(members, n_clusters=k))")
        members = check_members(members, n_clusters, missing=missing)
        if not self.accepts_missing and has_missing(members):
            raise UserError(missing_refusal(self.name, int(missing_mask(members).sum()), members.size))
        if self.needs_features:
            if X is None:
                raise UserError(f"method '{self.name}' needs the dataset's features (X), not only a label matrix")
            if X.shape[0] != members.shape[0]:
                raise UserError(f"X has {X.shape[0]} rows but members has {members.shape[0]}")
        rng = check_random_state(random_state)
        self.diagnostics_ = {}
        self.consensus_matrix_ = None
        with self._validated_params():
            labels = self._fit(members, int(n_clusters), X, rng)
        labels = np.asarray(labels).ravel()
        if labels.shape[0] != members.shape[0]:
            raise RuntimeError(f"{self.name} returned {labels.shape[0]} labels for {members.shape[0]} points")
        if labels.dtype.kind == "f" and not np.all(np.isfinite(labels)):
            raise RuntimeError(f"{self.name} produced non-finite labels")
        self.labels_ = relabel(labels)
        self.diagnostics_.setdefault("n_clusters_found", int(self.labels_.max()) + 1)
        return self

    def fit_predict(self, members, n_clusters=None, *, X=None, random_state=None, missing=None) -> np.ndarray:
        """:meth:`fit` and return the labels (0..k-1)."""
        return self.fit(members, n_clusters=n_clusters, X=X, random_state=random_state, missing=missing).labels_

    def _fit(self, members: np.ndarray, n_clusters: int, X, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError


def methods_accepting_missing() -> list[str]:
    """Names of the built-in methods that accept missing labels (imports every method module)."""
    from ensclust.methods import _REGISTRY, _discover

    _discover()
    return sorted(name for name, cls in _REGISTRY.items() if cls.accepts_missing)


def missing_refusal(name: str, n_missing: int, size: int) -> str:
    """The one-line refusal of a method without missing-label support."""
    return (f"method '{name}' does not accept missing labels ({n_missing} of {size} entries are missing); "
            f"methods that do: {', '.join(methods_accepting_missing())}")


def _init_signature(params: dict[str, Param]) -> inspect.Signature:
    """``(self, *, p1=default1, ...)``: the keyword ``__init__`` of a ``params`` table."""
    return inspect.Signature(
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [inspect.Parameter(python_name(name), inspect.Parameter.KEYWORD_ONLY, default=p.default)
           for name, p in params.items()])


def _make_init(cls, signature: inspect.Signature):
    """The generated ``__init__``: binds the keywords like a written one and stores them verbatim."""

    def __init__(self, **params):
        try:
            bound = signature.bind(self, **params)
        except TypeError as exc:
            raise TypeError(f"{cls.__name__}(): {exc}") from None
        bound.apply_defaults()
        for key, value in list(bound.arguments.items())[1:]:
            setattr(self, key, value)

    __init__.__signature__ = signature
    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    __init__.__doc__ = "Parameters (declared in ``params``):\n\n" + "\n".join(
        f"- {python_name(name)}: {p.describe()}{' - ' + p.doc if p.doc else ''}" for name, p in cls.params.items())
    return __init__
