"""Java Paimon as a reference: the bundle jars, the compiled driver and one long-lived JVM.

The jars come from PyPI, fetched once with ``pip download --no-deps`` into the cache
(``$PAIMON_RS_CACHE``, default ``~/.cache/paimon_rs``, under ``java/``) and extracted, keyed by
package version:

* ``paimon-python-ali==0.1.1`` (wheel): Paimon 1.0-SNAPSHOT (Sept 2024) with Parquet, ORC, Avro
  and Hadoop inside — the default reference;
* ``pypaimon==0.2.0`` (sdist): Paimon 0.9.0 without Hadoop, run with the 1.0 jar after it on the
  class path for the Hadoop classes (the 0.9 classes come first and win).
* ``1.0-s3``: the 1.0 bundle with Hadoop 3 and S3A before it on the class path (``class_path``),
  for warehouses on S3; commands then take ``catalog_options=s3_catalog_options(...)``.

``java/PaimonDriver.java`` is compiled once per (jar, source) with ``javac -cp <jar>`` and runs as
ONE JVM per pytest session, speaking JSON lines (see the Java file for the value encoding):

    jvm = JavaPaimon.start("1.0")
    jvm.call("read", warehouse=wh, table="db.t")  # -> {"fields": [...], "rows": [[...]]}

CLI: ``python tests/compat/java_env.py`` fetches the jars, compiles the driver and pings both JVMs.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import queue
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import zipfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DRIVER_SRC = HERE / "java" / "PaimonDriver.java"
CACHE = Path(os.environ.get("PAIMON_RS_CACHE", Path.home() / ".cache" / "paimon_rs")) / "java"

# version label -> (pip requirement, pip download flags, path of the jar inside the archive)
JARS = {
    "1.0": ("paimon-python-ali==0.1.1", ["--only-binary", ":all:"],
            "paimon_python_java/java_dependencies/paimon-python-java-bridge.jar"),
    "0.9": ("pypaimon==0.2.0", ["--no-binary", ":all:"],
            "pypaimon-0.2.0/deps/jars/paimon-python-java-bridge-0.9.0.jar"),
}


class JavaUnavailable(RuntimeError):
    """Java (javac) is not installed: scripts/setup.sh installs openjdk-17-jdk-headless."""


class JavaError(RuntimeError):
    """A driver command failed in Java; ``error`` is Java's exception, ``trace`` its stack."""

    def __init__(self, cmd: str, error: str, trace: str):
        self.cmd = cmd
        self.error = error
        self.trace = trace
        super().__init__(f"Java Paimon {cmd!r} failed: {error}\n{trace[:4000]}")


def _locked(name: str):
    CACHE.mkdir(parents=True, exist_ok=True)
    f = open(CACHE / f".{name}.lock", "w")
    fcntl.flock(f, fcntl.LOCK_EX)
    return f


def _fetch(req: str, flags: list[str], members: list[str]) -> list[Path]:
    """Files ``members`` of the PyPI archive of ``req``, downloaded and extracted once."""
    key = req.replace("==", "-")
    outs = [CACHE / key / Path(m).name for m in members]
    if all(o.exists() for o in outs):
        return outs
    with _locked(key):
        if all(o.exists() for o in outs):
            return outs
        with tempfile.TemporaryDirectory(prefix="paimon-jar-", dir=CACHE) as tmp:
            proc = subprocess.run(
                [sys.executable, "-m", "pip", "download", "--no-deps", "--no-input", "-q", *flags,
                 "-d", tmp, req],
                capture_output=True, text=True, env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
            if proc.returncode != 0:
                raise RuntimeError(f"pip download {req} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
            (archive,) = list(Path(tmp).iterdir())
            for member, out in zip(members, outs):
                part = Path(tmp) / "jar.part"
                if archive.suffix in (".whl", ".zip"):
                    with zipfile.ZipFile(archive) as z, z.open(member) as src, open(part, "wb") as dst:
                        shutil.copyfileobj(src, dst)
                else:
                    with tarfile.open(archive) as t:
                        src = t.extractfile(member)
                        if src is None:
                            raise RuntimeError(f"{member} missing from {archive.name}")
                        with open(part, "wb") as dst:
                            shutil.copyfileobj(src, dst)
                out.parent.mkdir(parents=True, exist_ok=True)
                os.replace(part, out)
    return outs


def jar(version: str) -> Path:
    """The bundle jar of ``version`` ("1.0" or "0.9"), downloaded and extracted once."""
    req, flags, member = JARS[version]
    return _fetch(req, flags, [member])[0]


# Java Paimon on S3 ("1.0-s3"): the 1.0 bundle holds Hadoop 2.8.5 without S3A (and without the
# htrace its FileSystem needs for any non-local path), and no paimon-s3. Hadoop 3.5 (pyspark's
# shaded hadoop-client jars, with its commons-lang3) goes before the bundle on the class path, and
# S3A: hadoop-aws 3.3.1 with the AWS SDK bundle 1.11.901 it was built against, both shipped in the
# sagemaker_pyspark 1.4.5 sdist. S3A_OPTIONS (catalog options, ``hadoop.`` + a Hadoop key) make it
# reach the S3 server; hadoop-aws 3.3.1 reads Hadoop 3.5's duration defaults ("60s") as numbers.
S3A_JARS = ("sagemaker_pyspark==1.4.5", ["--no-binary", ":all:"],
            ["sagemaker_pyspark-1.4.5/deps/jars/hadoop-aws-3.3.1.jar",
             "sagemaker_pyspark-1.4.5/deps/jars/aws-java-sdk-bundle-1.11.901.jar"])
S3A_OPTIONS = {
    "fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",  # s3:// URIs, as paimon_rs writes them
    "fs.s3a.path.style.access": "true",
    "fs.s3a.connection.ssl.enabled": "false",
    "fs.s3a.endpoint.region": "us-east-1",
    "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
    "fs.s3a.threads.keepalivetime": "60",
    "fs.s3a.connection.establish.timeout": "30000",
    "fs.s3a.connection.timeout": "200000",
    "fs.s3a.multipart.purge.age": "86400",
}


def hadoop_jars() -> list[Path]:
    """Hadoop 3 from the pyspark installed beside (requirements-dev.txt)."""
    try:
        import pyspark
    except ImportError as e:
        raise JavaUnavailable("Java Paimon on S3 takes Hadoop 3 from pyspark (requirements-dev.txt)") from e
    d = Path(pyspark.__file__).parent / "jars"
    out = [next(iter(sorted(d.glob(g))), None) for g in
           ["hadoop-client-api-*.jar", "hadoop-client-runtime-*.jar", "commons-lang3-*.jar"]]
    if None in out:
        raise JavaUnavailable(f"pyspark's Hadoop client jars or commons-lang3 not found in {d}")
    return [p for p in out if p is not None]


def s3_catalog_options(endpoint: str, access_key: str, secret_key: str) -> dict[str, str]:
    """Java catalog options that reach an S3 server at ``endpoint`` (JVM "1.0-s3")."""
    opts = {**S3A_OPTIONS, "fs.s3a.endpoint": endpoint, "fs.s3a.access.key": access_key,
            "fs.s3a.secret.key": secret_key}
    return {f"hadoop.{k}": v for k, v in opts.items()}


def class_path(version: str) -> list[Path]:
    """The jars a JVM of ``version`` runs with (0.9 borrows Hadoop from the 1.0 bundle; 1.0-s3
    puts Hadoop 3 and S3A before the 1.0 bundle)."""
    if version == "1.0-s3":
        return [*hadoop_jars(), *_fetch(*S3A_JARS), jar("1.0")]
    return [jar(version)] if version == "1.0" else [jar(version), jar("1.0")]


def _tool(name: str) -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / name).exists():
        return str(Path(home) / "bin" / name)
    found = shutil.which(name)
    if not found:
        raise JavaUnavailable(f"{name} not found: install a JDK 17 (scripts/setup.sh does: "
                              "apt-get install -y openjdk-17-jdk-headless)")
    return found


def compiled_driver(version: str) -> Path:
    """Directory of PaimonDriver.class compiled against ``version``'s jar (cached by source hash)."""
    h = hashlib.sha256(DRIVER_SRC.read_bytes() + version.encode()).hexdigest()[:16]
    out = CACHE / f"driver-{version}-{h}"
    if (out / "PaimonDriver.class").exists():
        return out
    cp = os.pathsep.join(str(p) for p in class_path(version))
    with _locked(f"driver-{version}"):
        if (out / "PaimonDriver.class").exists():
            return out
        tmp = Path(tempfile.mkdtemp(prefix="driver-", dir=CACHE))
        proc = subprocess.run([_tool("javac"), "-nowarn", "-encoding", "UTF-8", "-d", str(tmp), "-cp", cp,
                               str(DRIVER_SRC)], capture_output=True, text=True)
        if proc.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise RuntimeError(f"javac PaimonDriver.java against Paimon {version} failed:\n{proc.stderr}")
        tmp.chmod(0o755)
        os.replace(tmp, out)
    return out


class JavaPaimon:
    """One JVM running the driver; ``call`` sends a command and waits for its answer."""

    def __init__(self, version: str, proc: subprocess.Popen, log: Path):
        self.version = version
        self._proc = proc
        self._log = log
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._next = 0
        self._lock = threading.Lock()
        threading.Thread(target=self._pump, daemon=True).start()

    @staticmethod
    def start(version: str = "1.0", log_dir: str | os.PathLike | None = None) -> JavaPaimon:
        cp = os.pathsep.join(str(p) for p in [compiled_driver(version), *class_path(version)])
        log = Path(log_dir or tempfile.mkdtemp(prefix="paimon-java-")) / f"jvm-{version}.log"
        err = open(log, "w")
        # -XX:TieredStopAtLevel=1: C1 only; the tests run short bursts of many small commands.
        # UTC so TIMESTAMP_LTZ values never depend on the machine's zone.
        proc = subprocess.Popen(
            [_tool("java"), "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Duser.timezone=UTC",
             "-cp", cp, "PaimonDriver"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True, encoding="utf-8")
        err.close()
        jvm = JavaPaimon(version, proc, log)
        jvm.call("ping", timeout=120)
        return jvm

    def _pump(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def call(self, cmd: str, timeout: float = 300, **payload: Any) -> Any:
        """Run one command; returns its result or raises JavaError (or RuntimeError if the JVM died)."""
        with self._lock:
            self._next += 1
            req = {"id": self._next, "cmd": cmd, **payload}
            assert self._proc.stdin is not None
            try:
                self._proc.stdin.write(json.dumps(req) + "\n")
                self._proc.stdin.flush()
            except BrokenPipeError as e:
                raise RuntimeError(f"the Java {self.version} JVM is gone:\n{self.log_tail()}") from e
            deadline = time.monotonic() + timeout
            while True:
                try:
                    line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    raise RuntimeError(f"Java {cmd!r} timed out after {timeout}s:\n{self.log_tail()}") from None
                if line is None:
                    raise RuntimeError(f"the Java {self.version} JVM exited during {cmd!r}:\n{self.log_tail()}")
                resp = json.loads(line)
                if resp.get("id") == self._next:
                    break
        if not resp["ok"]:
            raise JavaError(cmd, resp["error"], resp.get("trace", ""))
        return resp.get("result")

    def log_tail(self, n: int = 4000) -> str:
        try:
            return self._log.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def close(self) -> None:
        if self._proc.poll() is None:
            try:
                self.call("quit", timeout=30)
            except (RuntimeError, JavaError):
                pass
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()


def main() -> int:
    for version in [*JARS, "1.0-s3"]:
        t0 = time.monotonic()
        try:
            jvm = JavaPaimon.start(version)
        except JavaUnavailable as e:
            print(json.dumps({"version": version, "unavailable": str(e)}))
            continue
        print(json.dumps({"version": version, "class_path": [str(p) for p in class_path(version)],
                          "driver": str(compiled_driver(version)), "seconds": round(time.monotonic() - t0, 1)}))
        jvm.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
