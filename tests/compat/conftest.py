import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import pypaimon_env  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "compat: interoperability with the reference pypaimon 2.1.0 (runs it in its own venv)")


@pytest.fixture(scope="session")
def pypaimon_venv():
    """Creates <repo>/.venv-pypaimon on first use (~35 s with a warm pip cache)."""
    return pypaimon_env.ensure_venv()
