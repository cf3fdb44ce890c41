"""One RCEC iteration (gram_spectrum + update + objective) of two source trees, alternated in one process.

    git archive <before-commit> ensclust | tar -x -C /tmp/before_rcec
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python results/bench/rcec_s20/iteration_ab.py /tmp/before_rcec

ORL's size: n = 400, K = 30 x 40 = 1200, X uniform in (1e-3, 1), one BLAS thread, 10 alternations.
"""

import importlib.util
import sys
import time

import numpy as np

from ensclust.methods import rcec as new


def load_old(tree):
    spec = importlib.util.spec_from_file_location("old_rcec", f"{tree}/ensclust/methods/rcec.py")
    module = importlib.util.module_from_spec(spec)
    source = open(spec.origin).read().replace("@register\n", "")  # the registry already holds the new class
    exec(compile(source, spec.origin, "exec"), module.__dict__)
    return module


def main(tree, n=400, m=30, c=40, reps=10):
    old = load_old(tree)
    rng = np.random.default_rng(0)
    K = m * c
    X = rng.uniform(1e-3, 1.0, (n, K))
    L = np.zeros((n, K))
    for j in range(m):
        L[np.arange(n), j * c + rng.integers(0, c, n)] = 1.0

    def step_old():
        H, s = old.gram_spectrum(X, 0.01)
        old.rcec_update(L, X, 0.1, 0.01, 4.0, H=H)
        old.rcec_objective(L, X, 0.1, 0.01, 4.0, s=s)

    def step_new():
        H, XH, s = new.gram_spectrum(X, 0.01)
        new.rcec_update(L, X, 0.1, 0.01, 4.0, H=H, XH=XH)
        new.rcec_objective(L, X, 0.1, 0.01, 4.0, s=s)

    t_old = t_new = 0.0
    for _ in range(reps):
        t0 = time.process_time()
        step_old()
        t_old += time.process_time() - t0
        t0 = time.process_time()
        step_new()
        t_new += time.process_time() - t0
    print(f"one iteration, CPU ms: before {1e3 * t_old / reps:.1f}, after {1e3 * t_new / reps:.1f}, "
          f"ratio {t_old / t_new:.2f}")


if __name__ == "__main__":
    main(sys.argv[1])
