#!/usr/bin/env bash
# s3s-fs (crates.io): a small S3 server written in Rust that keeps objects as files in a
# directory. Only `benches/bench_s3.py --server s3s` uses it, as a second, lighter server beside
# moto (the tests' server, a Python process whose CPU per request competes with the reader's):
# no crate of this project depends on it. Built once with `cargo install` into the cache
# (~2 min of 2 cores), like the venvs; prints the binary's path on stdout.
#
#   PAIMON_RS_CACHE   where it is kept (default ~/.cache/paimon_rs)
#
# 0.14.1 is the newest release that builds with rustc 1.95 (0.17 needs 1.96); it serves GET (with
# ranges), HEAD, ListObjectsV2, PUT with `If-None-Match: *`, multipart uploads (the completion
# with `If-None-Match: *` too), DELETE and server-side copy, with SigV4 authentication.
set -euo pipefail

VERSION=0.14.1
CACHE="${PAIMON_RS_CACHE:-$HOME/.cache/paimon_rs}"
ROOT="$CACHE/s3s-fs-$VERSION"
BIN="$ROOT/bin/s3s-fs"
if [ ! -x "$BIN" ]; then
  echo "== building s3s-fs $VERSION into $ROOT (once)" >&2
  # a target dir of its own (cargo install's temporary one), not the project's
  env -u CARGO_TARGET_DIR cargo install s3s-fs --version "$VERSION" --features binary --locked \
    --root "$ROOT" >&2
fi
echo "$BIN"
