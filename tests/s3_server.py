"""A real S3 API for the tests: moto's server (``moto[server]``, requirements-dev.txt) in a child
process on 127.0.0.1, and small helpers to look at the bucket with boto3 (which moto installs).

``S3sServer``: s3s-fs (a Rust S3 server over a directory, crates.io) with a lighter GET
(benches/s3s_server, built into the cache by scripts/install_s3s.sh on first use), a second
server for ``benches/bench_s3.py --server s3s`` only; the test suites use moto."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any, Callable, Dict, List

ACCESS_KEY = "testing"
SECRET_KEY = "testing"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ChildServer:
    """A test server in a child process on 127.0.0.1 (never a thread of the test process: our
    engine holds no GIL while it waits on the network, but a server thread would share the
    process): ``command(port)`` started, then ``probe`` polled until it answers (an HTTP error
    status is an answer too: a server that wants signed requests refuses the probe)."""

    def __init__(self, command: Callable[[int], List[str]], probe: str, what: str) -> None:
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(command(self.port), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 30
        while True:
            try:
                urllib.request.urlopen(self.endpoint + probe, timeout=1)
                break
            except urllib.error.HTTPError:
                break
            except Exception:
                if self.proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError(f"{what} did not start") from None
                time.sleep(0.1)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


class S3Server(ChildServer):
    """An S3 API in a child process: catalog options for it, and boto3 helpers."""

    def options(self) -> Dict[str, str]:
        """Catalog options with Paimon's names for this server."""
        return {"s3.endpoint": self.endpoint, "s3.access-key": ACCESS_KEY,
                "s3.secret-key": SECRET_KEY, "s3.path.style.access": "true", "s3.region": "us-east-1"}

    def client(self) -> Any:
        import boto3
        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=ACCESS_KEY,
                            aws_secret_access_key=SECRET_KEY, region_name="us-east-1")

    def new_bucket(self) -> str:
        name = f"b-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name

    def keys(self, bucket: str, prefix: str = "") -> List[str]:
        out: List[str] = []
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        for page in pages:
            out.extend(o["Key"] for o in page.get("Contents", []))
        return out


class MotoServer(S3Server):
    """moto's S3 server in a child process."""

    def __init__(self) -> None:
        super().__init__(lambda port: [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                         "/moto-api/", "moto server")


def s3s_binary() -> str:
    """The bench's s3s server binary (scripts/install_s3s.sh builds it into the cache the first time)."""
    script = Path(__file__).resolve().parents[1] / "scripts" / "install_s3s.sh"
    out = subprocess.run(["bash", str(script)], check=True, stdout=subprocess.PIPE, text=True)
    return out.stdout.strip().splitlines()[-1]


class S3sServer(S3Server):
    """benches/s3s_server (s3s-fs) in a child process, its objects as files in a temporary
    directory (removed by ``stop``). Its create-only PUT (``If-None-Match: *``) checks that the file is absent and then
    writes it, not atomically: enough for one writer (a bench), not for racing commits."""

    def __init__(self) -> None:
        binary = s3s_binary()
        self.root = tempfile.mkdtemp(prefix="paimon-s3s-")
        try:
            super().__init__(lambda port: [binary, "--host", "127.0.0.1", "--port", str(port), "--access-key",
                                           ACCESS_KEY, "--secret-key", SECRET_KEY, self.root], "/", "s3s-fs server")
        except BaseException:
            shutil.rmtree(self.root, ignore_errors=True)
            raise

    def stop(self) -> None:
        super().stop()
        shutil.rmtree(self.root, ignore_errors=True)
