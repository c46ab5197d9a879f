"""``data-file.path-directory`` between paimon_rs and pypaimon 2.1.0 (the oracle: it writes
``<table>/<dir>/<partition>/bucket-<n>/`` as Java's ``FileStorePathFactory``): each reads the
primary-key and append tables the other wrote, after more writes and (primary-key tables) a
compaction by paimon_rs; both put every data file under the directory, none beside it."""

from __future__ import annotations

import re

import pytest
from test_pypaimon_external_paths import SCRIPT as EXT_SCRIPT
from test_pypaimon_external_paths import check_rows

import pypaimon_env

pytestmark = pytest.mark.compat


def _script() -> str:
    """The external-paths script (same tables, writes and compaction) with the table option
    ``data-file.path-directory`` instead of external paths, reporting every data file's path
    relative to its table."""
    s = re.sub(r"EXT = \{.*?\}\n", 'EXT = {"data-file.path-directory": "data"}\n', EXT_SCRIPT,
               count=1, flags=re.S)
    # no external path to list (its sort would compare Nones)
    s = s.replace("def ext_paths(tb):", "def ext_paths(tb):\n    return []\n\ndef _ext_paths(tb):", 1)
    s = s.replace("out = {}", DATA_FILES + "out = {}", 1)
    s = s.replace('"in_table_dir": in_table_dir(name)}', '"files": data_files(name)}', 1)
    assert "def _ext_paths" in s and s.count("data-file.path-directory") == 1
    assert s.count('"files": data_files(name)') == 1
    return s


DATA_FILES = r'''
def data_files(name):
    root = os.path.join(wh, "db.db", name)
    return sorted(os.path.relpath(os.path.join(d, f), root)
                  for d, _, fs in os.walk(root) for f in fs if f.endswith(".parquet"))

'''
SCRIPT = _script()


def test_data_file_path_directory_between_paimon_rs_and_pypaimon(pypaimon_venv, tmp_path):
    got = pypaimon_env.run_script_with_paimon_rs(pypaimon_venv, SCRIPT, str(tmp_path))
    check_rows(got)
    for name, g in got.items():
        # every data file, whoever wrote it: data/dt=d<n>/bucket-<b>/<file>
        assert g["files"], name
        for p in g["files"]:
            parts = p.split("/")
            assert parts[0] == "data" and parts[1].startswith("dt=d") and parts[2].startswith("bucket-"), p
