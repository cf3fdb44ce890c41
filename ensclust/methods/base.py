"""The consensus-method API: parameter declarations, validation in one place, and the estimator base class.

A method is a small scikit-learn-style estimator over a label matrix::

    from ensclust.methods import get_method
    labels = get_method("eac-al").fit_predict(members, n_clusters=c, random_state=seed)

Subclasses declare ``name``, ``params`` (a dict of :class:`Param`), optionally ``needs_features = True``,
and implement ``_fit(members, n_clusters, X, rng)`` returning the labels. ``_fit`` may set
``self.diagnostics_`` (e.g. ``objective``, ``n_iter``, ``converged``) and ``self.consensus_matrix_``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ensclust.core.labels import check_members, relabel
from ensclust.errors import UserError, unknown_name_error
from ensclust.rng import check_random_state

_TYPES = {"float": float, "int": int, "str": str, "bool": bool}


@dataclass(frozen=True)
class Param:
    """Declaration of one method parameter.

    Parameters
    ----------
    default : the default value.
    type : "float", "int", "str" or "bool".
    low, high : optional bounds; ``low_open`` / ``high_open`` make them strict.
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
        prefix = f"{where}: " if where else ""
        if value is None and (self.allow_none or self.default is None):
            return None
        kind = _TYPES[self.type]
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
            raise UserError(f"{prefix}parameter '{name}' must be of type {self.type}, got {value!r}") from None
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


class ConsensusMethod:
    """Base class of all consensus methods (an estimator over an n x m label matrix)."""

    name: ClassVar[str] = ""
    params: ClassVar[dict[str, Param]] = {}
    needs_features: ClassVar[bool] = False
    #: True when the result depends on ``random_state`` (k-means, METIS seeds, random starts, ...).
    randomized: ClassVar[bool] = False
    #: True when the method may return fewer (or more) than ``n_clusters`` clusters by design.
    may_return_other_k: ClassVar[bool] = False
    summary: ClassVar[str] = ""

    def __init__(self, **params):
        self._params = self._validate_params(params)
        self.labels_ = None
        self.diagnostics_: dict = {}
        self.consensus_matrix_ = None

    # -- parameters --------------------------------------------------------------------------------
    @classmethod
    def _validate_params(cls, given: dict, where: str = "") -> dict:
        values = {k: p.default for k, p in cls.params.items()}
        for key, value in given.items():
            if key not in cls.params:
                hint = list(cls.params) or ["(this method has no parameters)"]
                raise unknown_name_error(f"parameter for method '{cls.name}'", key, hint, where)
            values[key] = cls.params[key].validate(key, value, where)
        cls._check_params(values, where)
        return values

    @classmethod
    def _check_params(cls, values: dict, where: str = "") -> None:
        """Cross-parameter checks; override when parameters constrain each other."""

    @classmethod
    def check_params(cls, params: dict, where: str = "") -> dict:
        """Validate a parameter dict without building an estimator (used by config validation)."""
        return cls._validate_params(params, where)

    def get_params(self) -> dict:
        return dict(self._params)

    def set_params(self, **params):
        self._params = self._validate_params({**self._params, **params})
        return self

    def __getattr__(self, item):
        # Parameters read as attributes (self.theta) - only reached when normal lookup fails.
        params = self.__dict__.get("_params")
        if params is not None and item in params:
            return params[item]
        raise AttributeError(item)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._params.items())
        return f"{type(self).__name__}({args})"

    # -- fitting -----------------------------------------------------------------------------------
    def fit(self, members, n_clusters: int, *, X=None, random_state=None):
        """Compute the consensus partition of ``members`` (n x m) into ``n_clusters`` clusters.

        Parameters
        ----------
        members : (n, m) array of integer labels; column q is base clustering q (any label values).
        n_clusters : number of consensus clusters.
        X : (n, d) features, required by methods with ``needs_features = True`` (ignored otherwise).
        random_state : None, int or numpy Generator; all randomness of the fit comes from it.
        """
        members = check_members(members, n_clusters)
        if self.needs_features:
            if X is None:
                raise UserError(f"method '{self.name}' needs the dataset's features (X), not only a label matrix")
            if X.shape[0] != members.shape[0]:
                raise UserError(f"X has {X.shape[0]} rows but members has {members.shape[0]}")
        rng = check_random_state(random_state)
        self.diagnostics_ = {}
        self.consensus_matrix_ = None
        labels = self._fit(members, int(n_clusters), X, rng)
        labels = np.asarray(labels).ravel()
        if labels.shape[0] != members.shape[0]:
            raise RuntimeError(f"{self.name} returned {labels.shape[0]} labels for {members.shape[0]} points")
        if labels.dtype.kind == "f" and not np.all(np.isfinite(labels)):
            raise RuntimeError(f"{self.name} produced non-finite labels")
        self.labels_ = relabel(labels)
        self.diagnostics_.setdefault("n_clusters_found", int(self.labels_.max()) + 1)
        return self

    def fit_predict(self, members, n_clusters: int, *, X=None, random_state=None) -> np.ndarray:
        """:meth:`fit` and return the labels (0..k-1)."""
        return self.fit(members, n_clusters, X=X, random_state=random_state).labels_

    def _fit(self, members: np.ndarray, n_clusters: int, X, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError
