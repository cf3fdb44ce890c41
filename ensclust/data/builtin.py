"""Datasets that need no file: scikit-learn's bundled sets and synthetic generators.

The bundled sets (iris, wine, digits, breast_cancer_sklearn) are generic fallbacks for demos; they are
not copies of any paper dataset (the AWEC "Breast Cancer" is the 683 x 9 Wisconsin-original set, registry
name ``breast_cancer``, which is why scikit-learn's WDBC is called ``breast_cancer_sklearn``).
"""

from __future__ import annotations

import numpy as np

from ensclust.errors import UserError

#: Defaults of the synthetic generators; every one can be overridden through ``params``.
GENERATOR_DEFAULTS = {
    "blobs": {"n_samples": 300, "centers": 3, "n_features": 2, "cluster_std": 1.0, "random_state": 0},
    "moons": {"n_samples": 300, "noise": 0.05, "random_state": 0},
    "circles": {"n_samples": 300, "noise": 0.05, "factor": 0.5, "random_state": 0},
    # Anisotropic blobs: the scikit-learn clustering-comparison example (blobs sheared by a fixed matrix).
    "aniso": {"n_samples": 300, "centers": 3, "random_state": 170},
}

BUNDLED = ("iris", "wine", "digits", "breast_cancer_sklearn")
BUILTIN_NAMES = BUNDLED + tuple(GENERATOR_DEFAULTS)


def load_builtin(name: str, params: dict | None = None):
    """Return ``(X, y, used_params)`` for a built-in dataset."""
    import sklearn.datasets as skd

    params = dict(params or {})
    if name in BUNDLED:
        unknown = set(params) - {"n_clusters"}
        if unknown:
            raise UserError(f"built-in dataset '{name}' takes no parameters (got {', '.join(sorted(unknown))})")
        loader = {
            "iris": skd.load_iris,
            "wine": skd.load_wine,
            "digits": skd.load_digits,
            "breast_cancer_sklearn": skd.load_breast_cancer,
        }[name]
        bunch = loader()
        return bunch.data, bunch.target, {}
    if name not in GENERATOR_DEFAULTS:
        raise KeyError(name)
    used = dict(GENERATOR_DEFAULTS[name])
    params.pop("n_clusters", None)
    unknown = set(params) - set(used)
    if unknown:
        raise UserError(
            f"built-in generator '{name}': unknown parameter(s) {', '.join(sorted(unknown))}; "
            f"valid: {', '.join(sorted(used))}"
        )
    used.update(params)
    if int(used["n_samples"]) < 2:
        raise UserError(f"built-in generator '{name}': n_samples must be at least 2")
    if name == "blobs":
        X, y = skd.make_blobs(**used)
    elif name == "moons":
        X, y = skd.make_moons(**used)
    elif name == "circles":
        X, y = skd.make_circles(**used)
    else:
        X, y = skd.make_blobs(n_samples=used["n_samples"], centers=used["centers"], random_state=used["random_state"])
        X = X @ np.array([[0.6, -0.6], [-0.4, 0.8]])
    return X, y, used
