"""The glibc malloc thresholds the binding sets at import (issue 27, docs/internals.md#allocator):
on by default, off with PAIMON_RS_MALLOC_TUNING=0, and never over the user's own GLIBC_TUNABLES /
MALLOC_* settings. Each case is a fresh interpreter (the setting is process-wide, made once at
import); glibc's state is read back with mallinfo2 around probe allocations."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or platform.libc_ver()[0] != "glibc"
    or tuple(int(x) for x in platform.libc_ver()[1].split(".")[:2]) < (2, 33),
    reason="glibc >= 2.33 only (mallinfo2; other C libraries are left alone)")

MB = 1 << 20

PROBE = r"""
import ctypes, json
libc = ctypes.CDLL("libc.so.6")
class MI2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]
libc.mallinfo2.restype = MI2
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
import paimon_rs._core as core

def own_mapping(size):
    # whether glibc serves a block of `size` bytes as its own mapping (mmap threshold below it)
    before = libc.mallinfo2().hblkhd
    p = libc.malloc(size)
    mapped = libc.mallinfo2().hblkhd - before >= size
    libc.free(p)
    return mapped

def kept_after_free(n, size):
    # heap bytes still held after n blocks of `size` bytes are freed (trim threshold above them)
    ps = [libc.malloc(size) for _ in range(n)]
    for p in reversed(ps):
        libc.free(p)
    return libc.mallinfo2().arena

print(json.dumps({"tuning": core.malloc_tuning(), "mapped_2mb": own_mapping(2 << 20),
                  "mapped_24mb": own_mapping(24 << 20), "mapped_40mb": own_mapping(40 << 20),
                  "arena_after": kept_after_free(48, 1 << 20)}))
"""


def run_probe(**env: str) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items()
         if k != "GLIBC_TUNABLES" and not k.startswith("MALLOC_") and k != "PAIMON_RS_MALLOC_TUNING"}
    e.update(env)
    out = subprocess.run([sys.executable, "-c", PROBE], env=e, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out


def probe(**env: str) -> dict:
    out = run_probe(**env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_set_at_import_by_default_large_blocks_stay_in_the_heap_and_freed_memory_is_kept():
    r = probe()
    t = r["tuning"]
    assert t["applied"] is True, t
    assert t["mmap_threshold"] == 32 * MB and t["trim_threshold"] == 64 * MB, t
    # glibc's default mmap threshold starts at 128 KiB and only grows as mapped blocks are freed:
    # with the setting, blocks below 32 MiB are served from the heap from the start
    assert r["mapped_24mb"] is False and r["mapped_2mb"] is False, r
    assert r["mapped_40mb"] is True, r  # above the threshold: its own mapping, as before
    # 48 MiB freed at the top of the heap stays (below the 64 MiB trim threshold)
    assert r["arena_after"] >= 48 * MB, r


@pytest.mark.parametrize("value", ["0", "off", "false", "no", "OFF"])
def test_env_switch_turns_it_off(value):
    r = probe(PAIMON_RS_MALLOC_TUNING=value)
    assert r["tuning"]["applied"] is False
    assert "PAIMON_RS_MALLOC_TUNING" in r["tuning"]["reason"]
    assert r["tuning"]["mmap_threshold"] == 0
    # glibc's own behaviour: 40 MiB is above the dynamic threshold's 32 MiB ceiling
    assert r["mapped_40mb"] is True, r


def test_unknown_switch_value_leaves_malloc_alone_and_says_why():
    out = run_probe(PAIMON_RS_MALLOC_TUNING="sometimes")
    # not silently: a warning through the paimon_rs logger (Python's last-resort handler prints it)
    assert "PAIMON_RS_MALLOC_TUNING=sometimes is not one of" in out.stderr, out.stderr
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["tuning"]["applied"] is False
    assert "not one of" in r["tuning"]["reason"]
    assert r["mapped_40mb"] is True, r


def test_switch_on_values_apply():
    for value in ("1", "on"):
        assert probe(PAIMON_RS_MALLOC_TUNING=value)["tuning"]["applied"] is True


def test_users_glibc_tunables_are_left_alone():
    # the user's 1 MiB mmap threshold stays in force: a 2 MiB block is its own mapping
    r = probe(GLIBC_TUNABLES="glibc.malloc.mmap_threshold=1048576")
    assert r["tuning"]["applied"] is False
    assert "GLIBC_TUNABLES" in r["tuning"]["reason"]
    assert r["mapped_2mb"] is True, r
    # tunables of other namespaces are not malloc settings
    assert probe(GLIBC_TUNABLES="glibc.rtld.optional_static_tls=512")["tuning"]["applied"] is True


@pytest.mark.parametrize("name,value", [("MALLOC_MMAP_THRESHOLD_", "1048576"), ("MALLOC_ARENA_MAX", "2"),
                                        ("MALLOC_TRIM_THRESHOLD_", "131072")])
def test_users_malloc_env_vars_are_left_alone(name, value):
    r = probe(**{name: value})
    assert r["tuning"]["applied"] is False
    assert name in r["tuning"]["reason"]
    if name == "MALLOC_MMAP_THRESHOLD_":
        assert r["mapped_2mb"] is True, r
