"""A process forked after paimon_rs did parallel work (Spark's Python workers are forked, so is
multiprocessing's default child) reads and writes: each process runs its own thread pool."""

import subprocess
import sys
import textwrap


def test_a_forked_child_reads_and_writes(tmp_path):
    code = textwrap.dedent(f"""
        import os
        import pyarrow as pa
        from paimon_rs import CatalogFactory, Schema
        cat = CatalogFactory.create({{"warehouse": {str(tmp_path)!r}}})
        cat.create_database("db", True)
        sch = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
        cat.create_table("db.t", Schema.from_pyarrow_schema(sch, primary_keys=["id"], options={{"bucket": "4"}}),
                         False)
        t = cat.get_table("db.t")

        def write_read(start):
            wb = t.new_batch_write_builder()
            w = wb.new_write()
            w.write_arrow(pa.table({{"id": list(range(start, start + 5000)), "v": ["x"] * 5000}}, schema=sch))
            wb.new_commit().commit(w.prepare_commit())
            w.close()
            rb = t.new_read_builder()
            return rb.new_read().to_arrow(rb.new_scan().plan().splits()).num_rows

        print("parent", write_read(0), flush=True)
        pid = os.fork()
        if pid == 0:
            print("child", write_read(5000), flush=True)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        print("status", status, flush=True)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["parent", "5000", "child", "10000", "status", "0"], out.stdout
