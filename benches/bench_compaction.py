"""Compaction (issue 11 "Must show"): upserts with writer compaction, reads as the table ages,
and a full compaction; paimon_rs side by side with pypaimon_rust 0.4.0.

Table: BIGINT primary key ``id``, values ``v`` (int64), ``f`` (float64), ``s`` (~16-char
string) as bench_merge_read; bucket = 4, unpartitioned, deduplicate, otherwise default options.
  upserts:  a base commit of 500,000 rows, then 20 upsert commits of 100,000 rows (half updates of
            existing keys, half new keys). Each implementation writes its own table with its own
            writer; each commit is timed (table handle .. commit; paimon_rs: its writer compacts
            before prepare_commit returns, so compaction is included; pypaimon_rust does not
            compact). After upsert commits 1, 5, 10 and 20 a full read is timed ``--repeat`` times
            after one warm-up (median). For paimon_rs, the largest number of sorted runs of any
            bucket after each commit (``table.compaction_plan()``), against the stop trigger
            (``num-sorted-run.stop-trigger``, default compaction-trigger + 3 = 8).
  stream:   the same commits through one ``StreamTableWrite`` (compaction in the background, as
            Java's streaming writer; the last commit waits for it, in its time): total, process
            CPU, runs after, one read after the last commit.
  full:     ``table.compact(full=True)`` of paimon_rs's table after the 20 commits, in a fresh
            subprocess: seconds, rows/s, and peak RSS (ru_maxrss) minus the RSS after imports and
            opening the table, against write-buffer-size (256 MB default) + 250 MB. Then, in the
            same subprocess, the live rows (read from the compacted table) are written afresh into
            a new table in one commit (``--repeat`` times, median): the compaction's rate as a
            ratio to that fresh write of the same rows.
Aims: read after 20 commits >= 0.8x our read after 1; sorted runs never above the stop trigger;
upsert commit throughput >= 2x pypaimon_rust's; full compaction >= 0.8x the fresh write; RSS
within budget.

The peer runs in the pypaimon venv of tests/compat/pypaimon_env.py through
benches/_compaction_peer.py.

    python benches/bench_compaction.py            # full size, 3 repeats
    python benches/bench_compaction.py --smoke    # CI: 20,000 rows + 20 x 4,000, 1 repeat
    python benches/bench_compaction.py --rows 200000 --update-rows 40000   # reduced size
"""

from __future__ import annotations

import argparse
import gc
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benches"))

from _peer_common import check_sum, commit_arrow, create_bench_table, load_ipc, read_table, run_peer  # noqa: E402
from bench_merge_read import data_sets  # noqa: E402

CHECKPOINTS = (1, 5, 10, 20)
MB = 1024 * 1024


def _parse_size(s: str) -> int:
    s = s.strip().lower().replace(" ", "")
    for suffix, mul in (("kb", 1024), ("mb", MB), ("gb", 1024 * MB), ("b", 1)):
        if s.endswith(suffix):
            return int(float(s[: -len(suffix)]) * mul)
    return int(s)


def stop_trigger(options: dict) -> int:
    if "num-sorted-run.stop-trigger" in options:
        return int(options["num-sorted-run.stop-trigger"])
    return int(options.get("num-sorted-run.compaction-trigger", 5)) + 3


def _timed_reads(cat, repeat: int) -> dict:
    read_table(cat)  # warm-up
    times, r = [], None
    for _ in range(repeat):
        r = None
        gc.collect()
        t0 = time.perf_counter()
        r = read_table(cat)
        times.append(time.perf_counter() - t0)
    assert r is not None
    return {"read_s": times, "rows": r.num_rows, "check": check_sum(r)}


def bench_ours(wh: Path, ipcs: list[str], options: dict, repeat: int, checkpoints) -> dict:
    from paimon_rs import CatalogFactory, Schema

    cat = CatalogFactory.create({"warehouse": str(wh)})
    create_bench_table(cat, Schema, load_ipc(ipcs[0]), options)
    commit_s, runs, reads, cpu = [], [], {}, 0.0
    for i, ipc in enumerate(ipcs):
        data = load_ipc(ipc)
        gc.collect()
        t0, c0 = time.perf_counter(), time.process_time()
        commit_arrow(cat, data)
        commit_s.append(time.perf_counter() - t0)
        cpu += time.process_time() - c0  # the commit's CPU: it compacts before returning
        del data
        plans = cat.get_table("db.bench").compaction_plan()
        runs.append(max((len(p.runs) for p in plans), default=0))
        if i in checkpoints:
            reads[str(i)] = _timed_reads(cat, repeat)
    return {"base_s": commit_s[0], "commit_s": commit_s[1:], "base_runs": runs[0],
            "runs": runs[1:], "reads": reads, "cpu_s": cpu}


def bench_ours_stream(wh: Path, ipcs: list[str], options: dict, repeat: int) -> dict:
    """The same commits through one ``StreamTableWrite`` (Java's streaming writer: compaction in
    the background, handed over by later commits). Each commit is timed (write ..
    ``prepare_commit(n)`` .. commit); the last upsert commit's ``wait_compaction=True`` (waits
    for the running compactions and hands them over) is in its time, so the total holds every
    compaction the write started. No reads or plans between commits (the background thread
    would get untimed time); one read after the last."""
    from paimon_rs import CatalogFactory, Schema

    cat = CatalogFactory.create({"warehouse": str(wh)})
    create_bench_table(cat, Schema, load_ipc(ipcs[0]), options)
    t = cat.get_table("db.bench")
    wb = t.new_stream_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    commit_s = []
    cpu, loading = 0.0, 0.0
    start = time.process_time()
    for i, ipc in enumerate(ipcs):
        c0 = time.process_time()
        data = load_ipc(ipc)
        gc.collect()
        loading += time.process_time() - c0
        t0, c0 = time.perf_counter(), time.process_time()
        w.write_arrow(data)
        c.commit(w.prepare_commit(i, wait_compaction=i == len(ipcs) - 1), i)
        commit_s.append(time.perf_counter() - t0)
        # process CPU (every thread) of the commit; a background compaction's CPU between
        # commits (while the next batch loads) is not counted, its wall time is hidden
        cpu += time.process_time() - c0
        del data
    # every thread's CPU from the first commit to the last one's wait, but loading the batches
    # (includes the background compactions' CPU; a load running beside one counts as load)
    all_cpu = time.process_time() - start - loading
    w.close()
    c.close()
    runs = max((len(p.runs) for p in cat.get_table("db.bench").compaction_plan()), default=0)
    reads = {"last": _timed_reads(cat, repeat)}
    return {"base_s": commit_s[0], "commit_s": commit_s[1:], "cpu_s": cpu, "all_cpu_s": all_cpu,
            "runs_after": runs,
            "reads": reads}


def bench_peer(wh: Path, ipcs: list[str], options: dict, repeat: int, checkpoints) -> dict:
    payload = {"warehouse": str(wh), "ipcs": ipcs, "options": options, "repeat": repeat,
               "checkpoints": sorted(checkpoints)}
    return run_peer("_compaction_peer.py", payload, timeout=7200)


def _child_full(cfg: dict) -> dict:
    """In a fresh process: full compaction (timed, peak RSS), then the fresh-write reference."""
    import resource

    import psutil

    from paimon_rs import CatalogFactory, Schema, _core

    cat = CatalogFactory.create({"warehouse": cfg["warehouse"]})
    table = cat.get_table("db.bench")
    gc.collect()
    baseline = psutil.Process().memory_info().rss
    t0 = time.perf_counter()
    sid = table.compact(full=True)
    compact_s = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    summary = list(_core.compaction_summary(table._core, sid)) if sid is not None else None
    runs = max((len(p.runs) for p in cat.get_table("db.bench").compaction_plan()), default=0)
    live = read_table(cat)
    rows, check = live.num_rows, check_sum(live)
    write_s = []
    for k in range(int(cfg["repeat"])):
        name = f"db.fresh{k}"
        cat.create_table(name, Schema.from_pyarrow_schema(
            live.schema, primary_keys=["id"], options=cfg["options"]), False)
        gc.collect()
        t0 = time.perf_counter()
        commit_arrow(cat, live, name)
        write_s.append(time.perf_counter() - t0)
        cat.drop_table(name, False)
    return {"snapshot": sid, "summary": summary, "compact_s": compact_s, "baseline": baseline,
            "peak": peak, "rows": rows, "check": check, "runs_after": runs, "write_s": write_s}


def bench_full(wh: Path, options: dict, repeat: int) -> dict:
    cfg = {"warehouse": str(wh), "options": options, "repeat": repeat}
    r = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(cfg)],
                       capture_output=True, text=True, timeout=7200)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip()[-2000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


def _rate(rows: int, s: float) -> str:
    return f"{rows / s / 1e6:.2f}M" if s > 0 else "-"


def report_stream(args, ours: dict, stream: dict, peer: dict) -> None:
    """The stream variant beside the batch one and the peer (totals of the upsert commits)."""
    sc, oc, pcs = stream.get("commit_s", []), ours.get("commit_s", []), peer.get("commit_s", [])
    if not sc:
        return
    print(f"\nstream write (one StreamTableWrite, compaction in the background; the last commit "
          f"waits for it): {len(sc)} upsert commits")
    print(f"  total {sum(sc):.3f} s (last commit, with the wait: {sc[-1]:.3f} s), "
          f"{_rate(args.update_rows * len(sc), sum(sc))} rows/s; process CPU in the commits "
          f"{stream['cpu_s']:.2f} s, with the background compactions between them "
          f"{stream['all_cpu_s']:.2f} s (base commit included; batch variant: {sum(oc):.3f} s, "
          f"CPU {ours.get('cpu_s', float('nan')):.2f} s)")
    print(f"  runs per bucket after: {stream['runs_after']}")
    last = stream["reads"]["last"]
    o_last = ours.get("reads", {}).get(str(args.commits))
    same = "-" if not o_last else (
        "ok" if (o_last["rows"], o_last["check"]) == (last["rows"], last["check"]) else "MISMATCH")
    print(f"  read after the last commit: {_rate(last['rows'], statistics.median(last['read_s']))} "
          f"rows/s (rows match the batch variant: {same})")
    if pcs:
        print(f"  vs pypaimon-rust: {sum(pcs) / sum(sc):.2f}x (batch variant "
              f"{sum(pcs) / sum(oc):.2f}x)" if oc else f"  vs pypaimon-rust: {sum(pcs) / sum(sc):.2f}x")


def report(args, ours: dict, peer: dict, full: dict, options: dict) -> bool:
    stop = stop_trigger(options)
    upd = args.update_rows
    print(f"\nupsert commits ({upd:,} rows each; seconds; runs = max sorted runs of a bucket "
          f"after the commit, stop trigger {stop})")
    print(f"{'commit':>6}{'paimon_rs s':>13}{'runs':>6}{'pypaimon-rust s':>17}")
    oc, pcs = ours.get("commit_s", []), peer.get("commit_s", [])
    print(f"{'base':>6}{ours.get('base_s', float('nan')):>13.3f}{ours.get('base_runs', 0):>6}"
          f"{peer.get('base_s', float('nan')):>17.3f}")
    for i in range(args.commits):
        o = f"{oc[i]:>13.3f}{ours['runs'][i]:>6}" if i < len(oc) else f"{'-':>13}{'-':>6}"
        p = f"{pcs[i]:>17.3f}" if i < len(pcs) else f"{'-':>17}"
        print(f"{i + 1:>6}{o}{p}")
    if oc:
        print(f"{'total':>6}{sum(oc):>13.3f}{'':>6}" + (f"{sum(pcs):>17.3f}" if pcs else ""))
        print(f"  paimon_rs upsert rows/s: {_rate(upd * len(oc), sum(oc))}"
              + (f"; pypaimon-rust: {_rate(upd * len(pcs), sum(pcs))}" if pcs else ""))

    print(f"\nfull read after upsert commit k (median of {args.repeat}; rows/s)")
    print(f"{'k':>4}{'rows':>12}{'paimon_rs':>11}{'pypaimon-rust':>15}  check")
    orr, prr = ours.get("reads", {}), peer.get("reads", {})
    for k in CHECKPOINTS:
        if k > args.commits:
            continue
        o, p = orr.get(str(k)), prr.get(str(k))
        rows = (o or p or {}).get("rows", 0)
        os_ = _rate(o["rows"], statistics.median(o["read_s"])) if o else "-"
        ps = _rate(p["rows"], statistics.median(p["read_s"])) if p else "-"
        ok = "-" if not (o and p) else (
            "ok" if (o["rows"], o["check"]) == (p["rows"], p["check"]) else "MISMATCH")
        print(f"{k:>4}{rows:>12,}{os_:>11}{ps:>15}  {ok}")

    budget = _parse_size(options.get("write-buffer-size", "256 mb")) + 250 * MB
    if "compact_s" in full:
        s = full["summary"]
        ws = statistics.median(full["write_s"])
        print(f"\nfull compaction of paimon_rs's table ({full['rows']:,} live rows)")
        if s:
            print(f"  snapshot {full['snapshot']}: files {s[0]} -> {s[1]}, "
                  f"{s[2] / MB:.1f} -> {s[3] / MB:.1f} MiB, rows {s[4]:,} -> {s[5]:,}; "
                  f"runs per bucket after: {full['runs_after']}")
        print(f"  compact {full['compact_s']:.3f} s = {_rate(full['rows'], full['compact_s'])} "
              f"live rows/s ({_rate(s[4], full['compact_s']) if s else '-'} input rows/s); "
              f"fresh write of the same rows {ws:.3f} s = {_rate(full['rows'], ws)} rows/s "
              f"(median of {len(full['write_s'])})")
        print(f"  peak RSS {full['peak'] / MB:.0f} MiB, baseline {full['baseline'] / MB:.0f} MiB, "
              f"compaction's share {(full['peak'] - full['baseline']) / MB:.0f} MiB; "
              f"budget write-buffer-size + 250 MB = {budget / MB:.0f} MiB")
        if orr.get(str(args.commits)) and (full["rows"], full["check"]) != (
                orr[str(args.commits)]["rows"], orr[str(args.commits)]["check"]):
            print("  MISMATCH: the compacted table's rows differ from the read before compaction")

    print("\naims")
    ok_all = True

    def aim(name: str, ok: bool | None, detail: str) -> None:
        nonlocal ok_all
        ok_all = ok_all and ok is not False
        print(f"  [{'met' if ok else 'n/a' if ok is None else 'NOT met'}] {name}: {detail}")

    first, last = orr.get("1"), orr.get(str(args.commits))
    if first and last:
        r1 = first["rows"] / statistics.median(first["read_s"])
        rn = last["rows"] / statistics.median(last["read_s"])
        aim(f"read after {args.commits} commits >= 0.8x read after 1", rn >= 0.8 * r1,
            f"{rn / r1:.2f}x ({rn / 1e6:.2f}M vs {r1 / 1e6:.2f}M rows/s)")
    else:
        aim("read after the last commit >= 0.8x read after 1", None, "no reads")
    runs = ours.get("runs")
    aim("sorted runs per bucket never above the stop trigger",
        None if not runs else max(runs) <= stop, f"max {max(runs) if runs else '-'} vs {stop}")
    if oc and pcs:
        ratio = (sum(pcs) / len(pcs)) / (sum(oc) / len(oc))
        aim("upsert commit throughput >= 2x pypaimon-rust", ratio >= 2, f"{ratio:.2f}x")
    else:
        aim("upsert commit throughput >= 2x pypaimon-rust", None, "a side failed")
    if "compact_s" in full:
        ratio = statistics.median(full["write_s"]) / full["compact_s"]
        aim("full compaction >= 0.8x fresh write", ratio >= 0.8, f"{ratio:.2f}x")
        share = full["peak"] - full["baseline"]
        aim("compaction peak RSS within write-buffer-size + 250 MB", share <= budget,
            f"{share / MB:.0f} MiB vs {budget / MB:.0f} MiB")
    else:
        aim("full compaction >= 0.8x fresh write", None, "failed")
    return ok_all


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=500_000)
    ap.add_argument("--update-rows", type=int, default=100_000)
    ap.add_argument("--commits", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-peer", action="store_true", help="paimon_rs only")
    ap.add_argument("--smoke", action="store_true", help="20,000 rows + 20 x 4,000, 1 repeat (CI)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(_child_full(json.loads(args.child))))
        return 0
    if args.smoke:
        args.rows, args.update_rows, args.repeat = 20_000, 4_000, 1
    sys.path.insert(0, str(ROOT / "tests" / "compat"))
    checkpoints = {k for k in CHECKPOINTS if k <= args.commits}
    options = {"bucket": "4"}
    workdir = Path(tempfile.mkdtemp(prefix="paimon-compaction-bench-"))
    try:
        ipcs, total = data_sets(args.rows, args.update_rows, args.commits, workdir)
        print(f"bench_compaction: base {args.rows:,} rows + {args.commits} upsert commits of "
              f"{args.update_rows:,} (half updates) -> {total:,} live rows; bucket=4, default "
              f"options; median of {args.repeat}")
        ours: dict = {}
        peer: dict = {}
        full: dict = {}
        try:
            ours = bench_ours(workdir / "ours", ipcs, options, args.repeat, checkpoints)
        except Exception as e:  # noqa: BLE001 - reported
            print(f"paimon_rs failed: {e}")
        if ours:
            try:
                full = bench_full(workdir / "ours", options, args.repeat)
            except Exception as e:  # noqa: BLE001 - reported
                print(f"full compaction failed: {e}")
        shutil.rmtree(workdir / "ours", ignore_errors=True)
        stream: dict = {}
        try:
            stream = bench_ours_stream(workdir / "stream", ipcs, options, args.repeat)
        except Exception as e:  # noqa: BLE001 - reported
            print(f"paimon_rs stream write failed: {e}")
        shutil.rmtree(workdir / "stream", ignore_errors=True)
        if not args.no_peer:
            try:
                peer = bench_peer(workdir / "peer", ipcs, options, args.repeat, checkpoints)
            except Exception as e:  # noqa: BLE001 - reported
                print(f"pypaimon-rust failed: {str(e).splitlines()[-1][:200]}")
        report(args, ours, peer, full, options)  # aims are reported, not enforced
        report_stream(args, ours, stream, peer)
        return 0 if ours and full and stream else 1
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
