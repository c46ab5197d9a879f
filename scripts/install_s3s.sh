#!/usr/bin/env bash
# The light S3 server of `benches/bench_s3.py --server s3s` (benches/s3s_server: s3s-fs 0.14.1
# from crates.io, a Rust S3 server over a directory, with a GET that reads its bytes in one call
# instead of 4 KiB hand-offs to a thread pool). A second server beside moto (the tests' server, a
# Python process whose CPU per request competes with the reader's) for the bench only: not a
# member of the workspace, no crate of the project depends on it. Built with its own lock file
# into the cache (~3 min of 2 cores the first time; later a no-op check), like the venvs; prints
# the binary's path on stdout.
#
#   PAIMON_RS_CACHE   where it is kept (default ~/.cache/paimon_rs)
#
# s3s-fs 0.14.1 is the newest release that builds with rustc 1.95 (0.17 needs 1.96). It serves GET
# (with ranges), HEAD, ListObjectsV2, PUT and multipart completion with `If-None-Match: *`
# (PreconditionFailed if the key exists; checked, then written: not atomic, one writer only),
# DELETE and server-side copy, with SigV4 authentication.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${PAIMON_RS_CACHE:-$HOME/.cache/paimon_rs}"
TARGET="$CACHE/s3s-bench-target"
CARGO_TARGET_DIR="$TARGET" cargo build --quiet --release --locked \
  --manifest-path "$ROOT/benches/s3s_server/Cargo.toml" >&2
echo "$TARGET/release/paimon-bench-s3s"
