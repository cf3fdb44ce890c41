import os

# One BLAS thread in the test process and the subprocesses it starts, as the experiment runner uses per fit:
# the small matrices of the tests cost up to 30x the CPU time with several threads on a loaded 2-core machine.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import pytest  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from ensclust.testing import shared_data_dir  # noqa: E402

_BLAS_LIMIT = threadpool_limits(limits=1, user_api="blas")  # if NumPy was imported before this file


@pytest.fixture(scope="session")
def data_dir():
    """The papers' datasets folder; tests using it are skipped cleanly when it is absent."""
    path = shared_data_dir()
    if path is None:
        pytest.skip("shared datasets not present (set ENSCLUST_DATA to run data tests)")
    return path
