import pytest

from ensclust.testing import shared_data_dir


@pytest.fixture(scope="session")
def data_dir():
    """The papers' datasets folder; tests using it are skipped cleanly when it is absent."""
    path = shared_data_dir()
    if path is None:
        pytest.skip("shared datasets not present (set ENSCLUST_DATA to run data tests)")
    return path
