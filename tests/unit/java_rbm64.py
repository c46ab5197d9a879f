"""Java Paimon's `RoaringBitmap64.bitmapOf(vals).serialize()` bytes (RoaringBitmap 1.2.1's
`Roaring64Bitmap` ART layout), hand-traced from the Java sources: no JVM here. The layout is
documented in crates/paimon-rs-core/src/merge/agg/rbm64.rs.

Only small shapes are supported: at most 4 distinct high keys (the top 48 bits of a value) that
differ in their last byte only (one leaf, or one Node4 under a 5-byte prefix) and at most 4096
values under each key (array or run containers, as `runOptimize` chooses).
"""

from __future__ import annotations


def _le(x: int, n: int) -> bytes:
    return x.to_bytes(n, "little")


def _leaf(high: int, idx: int) -> bytes:
    return bytes([4, 0, 0, 0]) + high.to_bytes(6, "big") + _le(idx, 8)


def _container(lows: list[int]) -> bytes:
    runs: list[list[int]] = []
    for x in sorted(lows):
        if runs and runs[-1][0] + runs[-1][1] + 1 == x:
            runs[-1][1] += 1
        else:
            runs.append([x, 0])
    if 2 * len(lows) > 2 + 4 * len(runs):  # ArrayContainer.runOptimize: a run container
        body = _le(len(runs), 2) + b"".join(_le(s, 2) + _le(n, 2) for s, n in runs)
        return bytes([1, 0]) + _le(len(lows), 4) + body
    return bytes([1, 2]) + _le(len(lows), 4) + b"".join(_le(x, 2) for x in sorted(lows))


def bitmap_of(*vals: int) -> bytes:
    groups: dict[int, list[int]] = {}
    for v in vals:
        lows = groups.setdefault(v >> 16, [])
        if v & 0xFFFF not in lows:
            lows.append(v & 0xFFFF)
    highs = list(groups)  # container slots in first-seen order
    if not highs:
        return b"\x00"
    keys = [h.to_bytes(6, "big") for h in highs]
    assert len(highs) <= 4 and len({k[:5] for k in keys}) == 1
    assert all(len(g) <= 4096 for g in groups.values())
    out = b"\x01" + _le(len(highs), 8)
    if len(highs) == 1:
        out += _leaf(highs[0], 0)
    else:
        order = sorted(range(len(highs)), key=lambda i: highs[i])
        # Node4: the 5 shared bytes as prefix, slot keys 0..3 sorted, written as slots 3..0
        slots = [keys[i][5] for i in order] + [0] * (4 - len(highs))
        out += bytes([0, len(highs), 0, 5]) + keys[0][:5] + bytes(reversed(slots))
        out += b"".join(_leaf(highs[i], i) for i in order)
    # one container array; capacities grow 1, 2, 3, 4: full up to 4 containers
    n = len(highs)
    out += _le(1, 4) + b"\xfe" + _le(n, 4) + b"".join(_container(groups[h]) for h in highs)
    return out + _le(n, 8) + _le(0, 4) + _le(n - 1, 4)
