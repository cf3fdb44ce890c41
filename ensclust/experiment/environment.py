"""The numerical environment a cell was computed in, and a short id for it.

Same config + seed gives byte-identical labels on one machine. Across machines, a fit whose result hangs on
a near-tie (a degenerate eigenspace, an almost-equal K-means start) can take the other side of it: the
BLAS kernels (OpenBLAS picks them by CPU: Haswell, SkylakeX, ...), the number of BLAS threads and the
library versions change the floating-point summation order. Each cell therefore records the id of its
environment (``env`` in ``timing.csv``), and ``environment.json`` beside it says what each id stands for, so
that a rerun that differs from committed labels can be told apart: same environment (a code change) or
another one (rounding on another machine).
"""

from __future__ import annotations

import functools
import hashlib
import json
import platform
import sys


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


@functools.lru_cache(maxsize=8)
def _environment(blas_threads: int) -> tuple[str, str]:
    import numpy
    import scipy
    import sklearn
    from threadpoolctl import threadpool_info

    blas = sorted({f"{lib.get('internal_api')} {lib.get('version')} {lib.get('architecture') or ''}".strip()
                   for lib in threadpool_info() if lib.get("user_api") == "blas"})
    env = {
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "scikit-learn": sklearn.__version__,
        "blas": blas,
        "blas_threads": int(blas_threads),
        "machine": platform.machine(),
        "cpu": _cpu_model(),
        "os": sys.platform,
    }
    text = json.dumps(env, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12], text


def current_environment(blas_threads: int) -> tuple[str, dict]:
    """``(id, description)`` of this process's numerical environment with ``blas_threads`` BLAS threads
    (0: the library's default). The id is the first 12 hex digits of the SHA-256 of the description."""
    env_id, text = _environment(int(blas_threads))
    return env_id, json.loads(text)
