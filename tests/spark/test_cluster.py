"""A real cluster: a Spark standalone master and worker on 127.0.0.1 (the pip package's
``spark-class``), executors in processes of their own, the round trip of the local tests through
``spark://127.0.0.1:<port>`` (write, update, full compaction, read) with every first task attempt
failing after writing its files.
Excluded by default: ``pytest -m cluster tests/spark/test_cluster.py`` (~1-2 min)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from standalone import Standalone

HERE = Path(__file__).resolve().parent


@pytest.mark.cluster
def test_round_trip_on_a_standalone_cluster(tmp_path):
    marker = tmp_path / "fail-first-attempt"
    marker.write_text("1")
    with Standalone(tmp_path / "cluster") as c:
        out = subprocess.run([sys.executable, str(HERE / "cluster_job.py"), c.url, str(tmp_path / "wh"), str(marker)],
                             capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-5000:]
    r = json.loads(out.stdout.strip().splitlines()[-1])
    print(r)
    assert r["snapshots"] == [1, 2, 3] and r["runs_after"] == [1]
    assert r["executors"] == 1 and not r["driver_in_executor"]
    assert r["spark_rows"] == r["plain_rows"] == 20_000 - 50 and r["ids_unique"]
    assert r["updated"] == 50
    assert r["orphans"] == []
    # issue #28 on the cluster, every first attempt failing: keys once, moved keys moved, the
    # sort compaction's rows unchanged and its files pruned by a box inside one cell
    dyn, cross, sort = r["dyn"], r["cross"], r["sort"]
    assert dyn["rows"] == 20_000 + 300 and dyn["keys_unique"] and dyn["moved"] == 300, dyn
    assert cross["rows"] == 20_000 and cross["keys_unique"] and cross["moved"] == 300, cross
    assert dyn["buckets"] >= 5 and cross["buckets"] >= 5, (dyn, cross)
    assert dyn["orphans"] == cross["orphans"] == [], (dyn, cross)
    assert sort["snapshot_kind"] == "OVERWRITE" and sort["rows_unchanged"], sort
    assert sort["orphans"] == [] and sort["files"] >= 8 and 1 <= sort["planned"] <= 2, sort


@pytest.mark.cluster
def test_speculative_attempts_on_two_hosts_commit_once(tmp_path):
    """Two workers, on 127.0.0.1 and 127.0.0.2 (Spark never speculates on the host of the slow
    attempt): task 0's first attempt writes its files and sleeps 40 s, its speculative copy on
    the other host wins; one file per bucket is committed, the straggler's are deleted."""
    marker = tmp_path / "slow-first-attempt"
    marker.write_text("1")
    with Standalone(tmp_path / "cluster", cores=1, hosts=("127.0.0.1", "127.0.0.2")) as c:
        out = subprocess.run([sys.executable, str(HERE / "speculation_job.py"), c.url, str(tmp_path / "wh"),
                              str(marker)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-5000:]
    r = json.loads(out.stdout.strip().splitlines()[-1])
    print(r)
    assert r["snapshot"] == 1 and r["rows"] == 4000
    assert r["write_s"] < 40, "the straggler was waited for: no speculative attempt won"
    assert len(r["files"]) == 4 and not any("-p0-a0-" in f for f in r["files"]), r["files"]
    assert r["orphans"] == []
