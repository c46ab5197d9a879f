"""The README quick start, the examples and a pypaimon-style use of the parity API type-check
under mypy and pyright (issue 13): ``CatalogFactory.create`` returns the concrete catalog, so
``catalog.create_table`` is known to both. Skipped where a checker is not installed
(requirements-dev.txt installs both; pyright's wheel bundles its JS and runs on the system
``node``)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PARITY_SNIPPET = '''
from typing import List, Optional

import pyarrow as pa

from paimon_rs import CatalogFactory, CoreOptions, Schema, Split, TableNotExistException


def main(warehouse: str) -> None:
    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database("db", True)
    schema = Schema.from_pyarrow_schema(pa.schema([("id", pa.int64()), ("dt", pa.string())]),
                                        partition_keys=["dt"],
                                        options={CoreOptions.BUCKET.key(): "-1"})
    catalog.create_table("db.t", schema, True)
    try:
        catalog.get_table("db.missing")
    except TableNotExistException:
        pass
    table = catalog.get_table("db.t")
    names: List[str] = [f.name for f in table.table_schema.fields]
    bucket: int = table.options.bucket()
    comment: Optional[str] = table.comment()
    rb = table.new_read_builder()
    scan = rb.new_scan().with_shard(0, 2)
    splits: List[Split] = scan.plan().splits()
    rows = sum(s.row_count for s in splits) + sum(f.row_count for s in splits for f in s.files)
    out: pa.Table = rb.new_read().to_arrow(splits, parallelism=2)
    print(names, bucket, comment, rows, out.num_rows, catalog.get_database("db").name)
'''


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> list:
    d = tmp_path_factory.mktemp("typing")
    readme = (ROOT / "README.md").read_text()
    m = re.search(r"## Quick start\n\n```python\n(.*?)```", readme, re.S)
    assert m, "README.md has no python block under '## Quick start'"
    quick = d / "quickstart.py"
    quick.write_text(m.group(1))
    parity = d / "parity_usage.py"
    parity.write_text(PARITY_SNIPPET)
    return [str(quick), str(parity)] + [str(p) for p in sorted((ROOT / "examples").glob("*.py"))]


def test_mypy(sources):
    pytest.importorskip("mypy")
    r = subprocess.run([sys.executable, "-m", "mypy", "--ignore-missing-imports", "--no-incremental",
                        *sources], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_pyright(sources):
    pyright = shutil.which("pyright", path=str(Path(sys.executable).parent))
    if pyright is None or shutil.which("node") is None:
        pytest.skip("pyright (pip) or node not installed")
    r = subprocess.run([pyright, "--pythonpath", sys.executable, *sources], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
