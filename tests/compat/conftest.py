import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import java_env  # noqa: E402
import pypaimon_env  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "compat: interoperability with the reference pypaimon 2.1.0 (runs it in its own venv)")


@pytest.fixture(scope="session")
def pypaimon_venv():
    """Creates <repo>/.venv-pypaimon on first use (~35 s with a warm pip cache)."""
    return pypaimon_env.ensure_venv()


@pytest.fixture(scope="session")
def java(tmp_path_factory):
    """One JVM running Java Paimon 1.0-SNAPSHOT for the whole session (java_env.py)."""
    jvm = java_env.JavaPaimon.start("1.0", tmp_path_factory.mktemp("jvm-1.0"))
    yield jvm
    jvm.close()


@pytest.fixture(scope="session")
def java09(tmp_path_factory):
    """One JVM running Java Paimon 0.9.0 (Hadoop from the 1.0 bundle) for the whole session."""
    jvm = java_env.JavaPaimon.start("0.9", tmp_path_factory.mktemp("jvm-0.9"))
    yield jvm
    jvm.close()
