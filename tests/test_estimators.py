"""Every method is a scikit-learn estimator whose keyword parameters come from its ``params`` table.

The label-matrix API (fit / fit_predict with ``n_clusters``, validation at fit time, ``lambda_``, list-valued
parameters) is tested here on small planted ensembles; scikit-learn's own estimator checks run at the end,
with the checks that need generated feature matrices listed as expected failures (and why).
"""

import functools
import inspect
import pickle

import joblib
import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClusterMixin, clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.estimator_checks import estimator_checks_generator
from sklearn.utils.validation import check_is_fitted

from ensclust.errors import UserError
from ensclust.methods import ConsensusMethod, Param, get_method, list_methods
from ensclust.methods.base import python_name
from ensclust.testing import blobs_with_members, planted_ensemble

METHODS = list_methods()
NAMES = list(METHODS)
TINY, _ = planted_ensemble(n=24, c=2, m=10, random_state=0)
X_TINY, TINY_F, _ = blobs_with_members(n=24, c=2, m=10, random_state=0)  # ACMK's n_base = 10


def _tiny_fit_args(cls):
    return (TINY_F, X_TINY) if cls.needs_features else (TINY, None)


def _other_value(p: Param):
    """A value different from the default (set_params stores it as given; fit would validate it)."""
    if p.choices:
        return next(c for c in p.choices if c != p.default) if len(p.choices) > 1 else p.default
    if p.type == "bool":
        return not p.default
    if p.type == "str":
        return "x"
    if p.type.startswith("list"):
        return [p.default[0]]
    if p.default is None:
        return 3
    if p.type == "int":
        return p.default + 1
    return 0.3 if p.default != 0.3 else 0.2


# -- the estimator API, on every registered method --------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_estimator_api(name):
    cls = METHODS[name]
    assert issubclass(cls, BaseEstimator) and issubclass(cls, ClusterMixin)
    # the keyword __init__ is the params table: Python names, keyword-only, the declared defaults
    sig = inspect.signature(cls.__init__)
    assert list(sig.parameters)[1:] == [python_name(k) for k in cls.params]
    for key, p in cls.params.items():
        par = sig.parameters[python_name(key)]
        assert par.kind is inspect.Parameter.KEYWORD_ONLY and par.default == p.default
    est = cls()
    assert est.get_params(deep=True) == est.get_params(deep=False) == {python_name(k): p.default
                                                                       for k, p in cls.params.items()}
    assert repr(est) == f"{cls.__name__}()"
    # set_params stores every value verbatim; get_params / clone / repr / the constructor agree
    new = {python_name(k): _other_value(p) for k, p in cls.params.items()}
    assert est.set_params(**new) is est
    assert est.get_params(deep=True) == new
    twin = clone(est)
    assert twin is not est and twin.get_params() == new
    assert type(est)(**est.get_params()).get_params() == new
    if cls.params:
        key, p = next(iter(cls.params.items()))
        value = _other_value(p)
        assert repr(cls(**{python_name(key): value})) == f"{cls.__name__}({python_name(key)}={value!r})"
    with pytest.raises(TypeError, match=cls.__name__):
        cls(no_such_parameter=1)


@pytest.mark.parametrize("name", NAMES)
def test_declared_defaults_are_valid(name):
    """Every default passes its own declaration (fit validates the defaults as well)."""
    cls = METHODS[name]
    valid = cls.check_params({})
    for key, p in cls.params.items():
        expected = list(p.default) if p.type.startswith("list") else p.default
        assert valid[key] == expected and type(valid[key]) is type(expected), key


@pytest.mark.parametrize("name", NAMES)
def test_fit_on_a_label_matrix(name):
    """What scikit-learn's fitting checks verify, on a label matrix: fit returns self and sets labels_,
    leaves the parameters alone, the fitted estimator pickles, a clone is unfitted."""
    cls = METHODS[name]
    members, X = _tiny_fit_args(cls)
    est = cls()
    with pytest.raises(NotFittedError):
        check_is_fitted(est)
    before = joblib.hash(est.get_params())
    assert est.fit(members, n_clusters=2, X=X, random_state=0) is est
    check_is_fitted(est)
    assert est.labels_.shape == (members.shape[0],) and isinstance(est.diagnostics_, dict)
    assert est.diagnostics_["n_clusters_found"] == est.labels_.max() + 1
    assert joblib.hash(est.get_params()) == before
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.labels_, est.labels_)
    with pytest.raises(NotFittedError):
        check_is_fitted(clone(est))


# -- fit / fit_predict signatures -------------------------------------------------------------------------
def test_fit_signatures():
    members, _ = planted_ensemble(n=30, c=3, m=6, random_state=1)
    expected = get_method("eac-al").fit_predict(members, 3, random_state=0)     # the runner's positional call
    np.testing.assert_array_equal(get_method("eac-al").fit_predict(members, n_clusters=3), expected)
    np.testing.assert_array_equal(get_method("eac-al").fit(members, n_clusters=3).labels_, expected)
    np.testing.assert_array_equal(get_method("eac-al").fit(members, 3).labels_, expected)
    y = np.arange(30) % 3
    np.testing.assert_array_equal(get_method("eac-al").fit(members, y, n_clusters=3).labels_, expected)
    with pytest.raises(UserError, match="number of clusters is required"):
        get_method("eac-al").fit(members)
    with pytest.raises(TypeError, match="twice"):
        get_method("eac-al").fit(members, 3, n_clusters=3)


# -- validation at fit time, parameters as plain attributes ---------------------------------------------
def test_set_params_after_attribute_assignment_is_what_fit_uses():
    """Regression: after ``m.theta = 5``, ``m.set_params(theta=0.9)`` used to fit with 5 (a stale attribute
    shadowed the parameter store) while repr and get_params said otherwise."""
    members, _ = planted_ensemble(n=60, c=3, m=10, noise_fraction=0.5, flip=0.3, random_state=2)
    with_09 = get_method("lwea", theta=0.9).fit_predict(members, 3)
    with_5 = get_method("lwea", theta=5).fit_predict(members, 3)
    assert not np.array_equal(with_09, with_5)   # the input tells the two values apart
    m = get_method("lwea")
    m.theta = 5
    m.set_params(theta=0.9)
    assert m.get_params()["theta"] == 0.9 and repr(m) == "LWEA(theta=0.9)"
    np.testing.assert_array_equal(m.fit_predict(members, 3), with_09)
    m.theta = 5
    np.testing.assert_array_equal(m.fit_predict(members, 3), with_5)


def test_parameters_are_stored_verbatim_and_validated_at_fit():
    members, _ = planted_ensemble(n=60, c=3, m=10, noise_fraction=0.5, flip=0.3, random_state=2)
    cls = METHODS["lwea"]
    m = cls(theta="0.9")                          # no validation in __init__ (scikit-learn convention)
    assert m.theta == "0.9"
    np.testing.assert_array_equal(m.fit_predict(members, 3), get_method("lwea", theta=0.9).fit_predict(members, 3))
    assert m.theta == "0.9" and m.get_params()["theta"] == "0.9"   # fit saw 0.9, the user's value is kept
    bad = cls(theta="abc")
    with pytest.raises(UserError, match="parameter 'theta' must be of type float"):
        bad.fit(members, 3)
    assert bad.theta == "abc"
    with pytest.raises(UserError, match="out of range"):
        cls(theta=-1.0).fit(members, 3)
    with pytest.raises(UserError, match="unknown value for parameter 'hac'"):
        cls().set_params(hac="nope").fit(members, 3)
    with pytest.raises(UserError):                # get_method validates at once (config and CLI errors early)
        get_method("lwea", theta="abc")


def test_lambda_is_lambda_underscore_in_python():
    cls = METHODS["ina"]
    members, _ = planted_ensemble(n=45, c=3, m=8, random_state=3)
    assert "lambda_" in inspect.signature(cls).parameters and cls.params["lambda"].default == cls().lambda_
    a = cls(lambda_=0.5)
    b = get_method("ina", **{"lambda": 0.5})      # the declared name (configs, --param lambda=0.5)
    c = get_method("ina", lambda_=0.5)
    assert a.get_params() == b.get_params() == c.get_params()
    assert "lambda" not in a.get_params() and repr(a) == "INA(lambda_=0.5)"
    assert cls().set_params(**{"lambda": 0.5}).lambda_ == 0.5
    assert cls.check_params({"lambda_": 0.5}) == cls.check_params({"lambda": 0.5})
    assert "lambda" in cls.check_params({"lambda_": 0.5})   # stored params keep the declared name
    with pytest.raises(UserError, match="given twice"):
        cls.check_params({"lambda": 0.5, "lambda_": 0.5})
    with pytest.raises(TypeError):
        cls(**{"lambda": 0.5})                    # the constructor takes Python names only
    np.testing.assert_array_equal(a.fit_predict(members, 3, random_state=0),
                                  b.fit_predict(members, 3, random_state=0))


def test_lambda_alias_in_a_config():
    from ensclust.experiment.config import load_config_text
    from ensclust.experiment.runner import plan_cells

    text = """name: alias
seed: 0
datasets: [{name: blobs, params: {n_samples: 30, centers: 3, random_state: 0}}]
pool: {generator: kmeans, k: c, size: 6}
ensemble: {mode: random, size: 4, repetitions: 2, seed: 1}
methods:
  - {name: ina, label: INA, params: {LAMBDA: 0.5}, grid: {tol: [1e-6, 1e-5]}}
metrics: [ari]
"""
    declared = load_config_text(text.replace("LAMBDA", "lambda"))
    python = load_config_text(text.replace("LAMBDA", "lambda_"))
    assert declared.methods[0].params == python.methods[0].params == {"lambda": 0.5}
    assert [c["fingerprint"] for c in plan_cells(declared)] == [c["fingerprint"] for c in plan_cells(python)]
    assert '"lambda":0.5' in plan_cells(python)[0]["params"]
    with pytest.raises(UserError, match="given twice"):
        load_config_text(text.replace("LAMBDA: 0.5", "lambda: 0.5, lambda_: 0.5"))


def test_list_valued_parameters():
    cls = METHODS["spce"]
    assert cls.params["schedule"].type == "list[float]" and cls.params["inner_caps"].type == "list[int]"
    as_text = cls.check_params({"schedule": "0.9,0.5", "inner_caps": "3,10"})
    as_list = cls.check_params({"schedule": [0.9, 0.5], "inner_caps": (3, 10.0)})
    assert as_text["schedule"] == as_list["schedule"] == [0.9, 0.5]
    assert as_text["inner_caps"] == as_list["inner_caps"] == [3, 10]
    assert all(type(v) is int for v in as_list["inner_caps"])
    with pytest.raises(UserError, match="must be of type list\\[int\\]"):
        cls.check_params({"schedule": [0.9, 0.5], "inner_caps": [3, 2.5]})
    with pytest.raises(UserError, match="is empty"):
        cls.check_params({"schedule": ""})
    with pytest.raises(UserError, match="list"):
        cls.check_params({"schedule": 0.5})
    members, _ = planted_ensemble(n=30, c=3, m=6, random_state=1)
    np.testing.assert_array_equal(
        get_method("spce", schedule=[0.9, 0.5], inner_caps=[3, 10]).fit_predict(members, 3),
        get_method("spce", schedule="0.9,0.5", inner_caps="3,10").fit_predict(members, 3))


def test_generated_and_written_init():
    class Written(ConsensusMethod):
        params = {"a": Param(1.0), "lambda": Param(0.5)}

        def __init__(self, *, a=1.0, lambda_=0.5):
            self.a = a
            self.lambda_ = lambda_

    assert Written(lambda_=2.0).get_params() == {"a": 1.0, "lambda_": 2.0}
    with pytest.raises(TypeError, match="must take the parameters of its params table"):
        class Wrong(ConsensusMethod):
            params = {"a": Param(1.0)}

            def __init__(self, *, b=1.0):
                self.b = b

    class Generated(ConsensusMethod):
        """A method."""

        params = {"a": Param(1.0, doc="the a")}

    assert "a: float, default 1.0" in Generated.__init__.__doc__ and Generated(a=3).a == 3


# -- scikit-learn's estimator checks ----------------------------------------------------------------------
#: scikit-learn fits these checks on generated continuous features (make_blobs, uniform noise) without a
#: number of clusters; a consensus method fits an integer n x m label matrix and needs n_clusters, so fit
#: raises UserError at once. test_fit_on_a_label_matrix checks the same properties on a label matrix.
_NEEDS_FEATURES = "fits generated continuous features without n_clusters; the input here is a label matrix"
#: these checks expect scikit-learn's ValueError/TypeError messages (check_array) for bad input; ensclust
#: raises its one-line UserError ("members must be a non-empty n x m label matrix ...") for the CLI.
_ERROR_TYPE = "bad input raises ensclust's one-line UserError, not scikit-learn's check_array errors"
NOT_APPLICABLE = {
    **{check: _NEEDS_FEATURES for check in (
        "check_clustering", "check_dict_unchanged", "check_dont_overwrite_parameters", "check_estimators_dtypes",
        "check_estimators_fit_returns_self", "check_estimators_overwrite_params", "check_estimators_pickle",
        "check_f_contiguous_array_estimator", "check_fit2d_1feature", "check_fit2d_1sample",
        "check_fit2d_predict1d", "check_fit_check_is_fitted", "check_fit_idempotent",
        "check_methods_sample_order_invariance", "check_methods_subset_invariance", "check_n_features_in",
        "check_n_features_in_after_fitting", "check_pipeline_consistency", "check_readonly_memmap_input")},
    **{check: _ERROR_TYPE for check in (
        "check_complex_data", "check_dtype_object", "check_estimators_empty_data_messages",
        "check_estimators_nan_inf", "check_estimator_sparse_array", "check_estimator_sparse_matrix",
        "check_estimator_sparse_tag", "check_fit1d", "check_positive_only_tag_during_fit")},
    "check_fit_score_takes_y": "fit_predict keeps n_clusters as its second argument (the experiment runner "
                               "calls fit_predict(members, n_clusters, ...)); fit(members, y=None) is fine",
}


def _not_applicable(est) -> dict:
    out = dict(NOT_APPLICABLE)
    if "max_iter" in est.params:
        out["check_non_transformer_estimators_n_iter"] = (
            "iterations are reported in diagnostics_['n_iter'] (not n_iter_), and " + _NEEDS_FEATURES)
    return out


def _check_name(check) -> str:
    while isinstance(check, functools.partial):
        check = check.func
    return check.__name__


def _check_id(value) -> str:
    if isinstance(value, ConsensusMethod):
        return type(value).__name__
    keywords = {}
    while isinstance(value, functools.partial):
        keywords.update(value.keywords)
        value = value.func
    return value.__name__ + (f"({', '.join(f'{k}={v}' for k, v in keywords.items())})" if keywords else "")


SKLEARN_ESTIMATORS = [cls() for cls in METHODS.values()]


# The checks listed in NOT_APPLICABLE are skipped with their reason (rather than run as expected failures:
# pytest formats the traceback of every expected failure, which made this file take minutes);
# test_sklearn_checks_not_applicable_fail below runs them and requires each to fail, so the list stays exact.
@pytest.mark.parametrize("estimator, check", [
    case for est in SKLEARN_ESTIMATORS
    for case in estimator_checks_generator(est, legacy=True, expected_failed_checks=_not_applicable(est), mark="skip")
], ids=_check_id)
def test_sklearn_checks(estimator, check):
    check(estimator)


@pytest.mark.parametrize("estimator", SKLEARN_ESTIMATORS, ids=_check_id)
def test_sklearn_checks_not_applicable_fail(estimator):
    skipped = _not_applicable(estimator)
    names = set()
    for est, check in estimator_checks_generator(estimator, legacy=True):
        name = _check_name(check)
        if name in skipped:
            names.add(name)
            with pytest.raises(Exception):  # noqa: B017 - any failure: the check does not apply
                check(est)
    assert names == set(skipped)


def test_methods_command_shows_the_python_spelling(capsys):
    from ensclust.testing import invoke_cli

    code, out, err = invoke_cli(capsys, "methods", "ina", "spce")
    assert code == 0, err
    assert "    lambda (Python: lambda_): float, default 0.1" in out
    assert "    schedule: list[float], default (0.9, 0.8, 0.7, 0.6, 0.5)" in out
