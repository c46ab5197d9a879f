"""A Spark standalone cluster on 127.0.0.1 from the pip package's ``spark-class``: one master,
one worker; executors run in processes of their own (what a real cluster does; nothing may rely
on driver-local state). Used by test_cluster.py and benches/bench_spark.py.

    python tests/spark/standalone.py     # starts one, prints its URL, stops on Enter
"""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import List, Optional, Tuple


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spark_home() -> str:
    import pyspark

    return os.path.dirname(pyspark.__file__)


class Standalone:
    """``with Standalone(log_dir) as c: ... c.url``; the master and worker are stopped (their
    process groups, which hold the executors) on exit."""

    def __init__(self, log_dir: Path, cores: int = 2, memory: str = "2g", hosts: Tuple[str, ...] = ("127.0.0.1",)):
        self.log_dir = Path(log_dir)
        self.cores, self.memory, self.hosts = cores, memory, hosts
        self.procs: List[subprocess.Popen] = []
        self.port = _free_port()
        self.url = f"spark://127.0.0.1:{self.port}"

    def _env(self) -> dict:
        env = dict(os.environ)
        env.update(SPARK_HOME=spark_home(), SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
                   SPARK_WORKER_DIR=str(self.log_dir / "work"), SPARK_NO_DAEMONIZE="1")
        return env

    def _start(self, name: str, args: List[str], local_ip: str = "127.0.0.1") -> subprocess.Popen:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_dir / f"{name}.log", "w")  # noqa: SIM115 (closed with the process)
        cmd = [os.path.join(spark_home(), "bin", "spark-class"), *args]
        env = {**self._env(), "SPARK_LOCAL_IP": local_ip}
        p = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                             start_new_session=True)
        self.procs.append(p)
        return p

    def _wait_for(self, name: str, needle: str, timeout: float = 90) -> None:
        deadline = time.time() + timeout
        path = self.log_dir / f"{name}.log"
        while time.time() < deadline:
            if path.exists() and needle in path.read_text(errors="replace"):
                return
            for p in self.procs:
                if p.poll() is not None:
                    raise RuntimeError(f"{name} exited ({p.returncode}): {path.read_text(errors='replace')[-3000:]}")
            time.sleep(0.3)
        raise TimeoutError(f"{name} did not log {needle!r} within {timeout} s: see {path}")

    def start(self) -> "Standalone":
        self._start("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                               "--port", str(self.port), "--webui-port", str(_free_port())])
        self._wait_for("master", "I have been elected leader")
        # one worker per host (speculation needs two: Spark never speculates on the same host)
        for i, host in enumerate(self.hosts):
            name = "worker" if i == 0 else f"worker{i}"
            self._start(name, ["org.apache.spark.deploy.worker.Worker", self.url, "--host", host,
                               "--cores", str(self.cores), "--memory", self.memory,
                               "--webui-port", str(_free_port()), "--work-dir", str(self.log_dir / f"work{i}")],
                        local_ip=host)
            self._wait_for(name, "Successfully registered with master")
        return self

    def stop(self) -> None:
        import signal

        for p in reversed(self.procs):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for p in reversed(self.procs):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        self.procs.clear()

    def __enter__(self) -> "Standalone":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def session(master: str, app: str = "paimon_rs", extra: Optional[dict] = None):
    """A SparkSession on ``master`` with this venv's python in the executors."""
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    b = (SparkSession.builder.master(master).appName(app)
         .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
         .config("spark.pyspark.python", sys.executable)
         .config("spark.sql.session.timeZone", "UTC")
         .config("spark.sql.shuffle.partitions", "8"))
    for k, v in (extra or {}).items():
        b = b.config(k, v)
    return b.getOrCreate()


if __name__ == "__main__":
    import tempfile

    with Standalone(Path(tempfile.mkdtemp(prefix="spark-standalone-"))) as c:
        print(c.url, flush=True)
        input("Enter stops the cluster\n")
