"""``--scheduler tcp://HOST:PORT``: ampcalc on a cluster started as a cluster is run.

A ``dask scheduler`` and two ``dask worker`` processes (each with its nanny, one thread)
are started on 127.0.0.1 with free ports, in working directories of their own; the
client runs ``weights`` and ``pws sanitize`` through the scheduler's address from yet
another directory, with relative paths. The part files, concatenated, are the
one-process output byte for byte, and nothing listens on anything but 127.0.0.1. Every
process the test starts is ended by it (its whole process group).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import EXAMPLES, ROOT
from test_dask_cluster import _listening

distributed = pytest.importorskip("distributed")
psutil = pytest.importorskip("psutil")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

START = 180.0  # s: a loaded 2-core machine starts a Python process with dask in 5–20 s
RUN = 300.0  # s: one CLI run


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # the same ampcalc on every process
    env.pop("AMPCALC_DEBUG", None)
    return env


def _start(cmd: list[str], cwd: Path, log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as fh:
        return subprocess.Popen(
            cmd,
            cwd=cwd,
            env=_env(),
            stdin=subprocess.DEVNULL,
            stdout=fh,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: the nanny's worker with it
        )


def _end(procs: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM to each process group, then SIGKILL to what is left."""
    for proc in reversed(procs):  # workers before the scheduler
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
    for proc in reversed(procs):
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pass
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # a nanny's worker may outlive it
        proc.wait(timeout=20)


def _tree(procs: list[subprocess.Popen[bytes]]) -> list[Any]:
    found = []
    for proc in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            top = psutil.Process(proc.pid)
            found += [top, *top.children(recursive=True)]
    return found


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("cluster")
    info = root / "scheduler.json"
    procs: list[subprocess.Popen[bytes]] = []
    try:
        (root / "scheduler").mkdir()
        procs.append(
            _start(
                [
                    sys.executable, "-m", "distributed.cli.dask_scheduler",
                    "--host", "127.0.0.1", "--port", "0",
                    # the HTTP server runs without the dashboard too: a free loopback port
                    "--no-dashboard", "--dashboard-address", "127.0.0.1:0",
                    "--scheduler-file", str(info),
                    "--idle-timeout", "900",  # gone by itself should this test die
                ],
                root / "scheduler",
                root / "scheduler.log",
            )
        )  # fmt: skip
        deadline = time.monotonic() + START
        while not info.exists() or not info.read_text(encoding="utf-8").strip():
            assert procs[0].poll() is None, (root / "scheduler.log").read_text()
            assert time.monotonic() < deadline, "the scheduler did not start"
            time.sleep(0.2)
        time.sleep(0.2)  # written in one go, but let it finish
        address = json.loads(info.read_text(encoding="utf-8"))["address"]
        assert address.startswith("tcp://127.0.0.1:")
        for k in range(2):
            (root / f"worker{k}").mkdir()
            procs.append(
                _start(
                    [
                        sys.executable, "-m", "distributed.cli.dask_worker", address,
                        "--host", "127.0.0.1", "--nthreads", "1", "--nworkers", "1",
                        "--no-dashboard", "--dashboard-address", "127.0.0.1:0",
                        "--name", f"w{k}", "--death-timeout", "120",
                    ],
                    root / f"worker{k}",
                    root / f"worker{k}.log",
                )
            )  # fmt: skip
        with distributed.Client(address, timeout=START, set_as_default=False) as client:
            client.wait_for_workers(2, timeout=START)
            assert len(client.scheduler_info()["workers"]) == 2
        yield {"address": address, "procs": procs, "root": root}
    finally:
        _end(procs)


@contextlib.contextmanager
def _watch(pid: int, into: list[tuple[str, int]]) -> Iterator[None]:
    """Collect the listening sockets of ``pid`` and its children while the body runs."""
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            with contextlib.suppress(psutil.Error):
                into.extend(_listening(pid))
            time.sleep(0.02)

    th = threading.Thread(target=poll, daemon=True)
    th.start()
    try:
        yield
    finally:
        done.set()
        th.join(timeout=10)


def _ampcalc(cwd: Path, *args: str, watch: list[tuple[str, int]] | None = None) -> str:
    proc = subprocess.Popen(
        [sys.executable, "-m", "ampcalc", *args],
        cwd=cwd,
        env=_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        with _watch(proc.pid, watch) if watch is not None else contextlib.nullcontext():
            _, err = proc.communicate(timeout=RUN)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=20)
    assert proc.returncode == 0, err
    return err


def _joined(out: Path) -> bytes:
    """Part files concatenated in order, one header kept (the one-process layout)."""
    texts = [p.read_bytes() for p in sorted(out.glob("part-*.csv"))]
    head = texts[0].split(b"\n", 1)[0] + b"\n"
    assert len(texts) > 1 and all(t.startswith(head) for t in texts)
    return head + b"".join(t[len(head) :] for t in texts)


def _client_dir(root: Path, name: str) -> Path:
    d = root / name
    d.mkdir()
    return d


def _assert_loopback(cluster: dict[str, Any], seen: list[tuple[str, int]]) -> None:
    # the client connects out only; what listens is the scheduler, nannies and workers
    assert seen == [], seen
    socks = []
    for p in _tree(cluster["procs"]):
        with contextlib.suppress(psutil.Error):
            socks += [c.laddr.ip for c in p.net_connections(kind="inet") if c.status == "LISTEN"]
    # scheduler and its HTTP server; per worker its nanny, the worker and its HTTP server
    assert len(socks) >= 2 + 2 * 3, socks
    assert set(socks) == {"127.0.0.1"}


def test_weights_on_a_running_cluster(cluster: dict[str, Any]) -> None:
    d = _client_dir(cluster["root"], "weights")
    rng = np.random.default_rng(20260107)
    x = rng.normal(0.0, 0.5, size=(2500, 2))
    x[[7, 1800]] = [[3.0, 1.0], [-2.5, -2.0]]  # outside ‖x‖₁ <= 3
    rows = [f"{a!r},{b!r}" for a, b in x.tolist()]
    (d / "all.csv").write_text("\n".join(["x,y", *rows]) + "\n", encoding="utf-8")
    (d / "parts").mkdir()
    for i, (a, b) in enumerate(((0, 900), (900, 901), (901, 2500))):
        (d / "parts" / f"p-{i}.csv").write_text(
            "\n".join(["x,y", *rows[a:b]]) + "\n", encoding="utf-8"
        )
    (d / "pq").mkdir()
    for i, (a, b) in enumerate(((0, 1300), (1300, 2500))):
        pq.write_table(pa.table({"x": x[a:b, 0], "y": x[a:b, 1]}), d / "pq" / f"p-{i}.parquet")
    (d / "design.yaml").write_text(
        "mechanism: {profile: laplace-sum, scale: 4.0}\n"
        "sampling: {scheme: importance, records: all.csv, columns: [x, y], "
        "probabilities: privacy-constrained, radius: 3.0}\n"
        "target: {epsilon_prime: 1.0}\n",
        encoding="utf-8",
    )
    common = ["weights", "design.yaml", "--sample", "--seed", "41"]
    one = _ampcalc(d, *common, "-o", "one.csv")
    want = (d / "one.csv").read_bytes()
    assert 0 < want.count(b"\n") - 1 < 2500  # a sample: some rows kept, not all
    seen: list[tuple[str, int]] = []
    address = cluster["address"]
    for src, out in (("parts", "out-csv"), ("pq/*.parquet", "out-pq")):
        run = ["--engine", "dask", "--scheduler", address, "--input", src, "-o", out]
        err = _ampcalc(d, *common, *run, "--output-format", "csv", watch=seen)
        assert _joined(d / out) == want
        assert err.replace(out, "OUT") == one.replace("one.csv", "OUT")
    _assert_loopback(cluster, seen)


def test_pws_sanitize_on_a_running_cluster(cluster: dict[str, Any]) -> None:
    d = _client_dir(cluster["root"], "pws")
    rng = np.random.default_rng(20260108)
    n = 6000
    freqs = rng.zipf(1.6, n).clip(1, 5000)
    keys = [f"q{i:05d}" + ("é" if i % 7 == 0 else "") for i in range(n)]
    rows = [f"{k},{f},t{i % 3}" for i, (k, f) in enumerate(zip(keys, freqs.tolist(), strict=True))]
    head = "key,frequency,topic"
    (d / "all.csv").write_text("\n".join([head, *rows]) + "\n", encoding="utf-8")
    (d / "csv").mkdir()
    (d / "pq").mkdir()
    cuts = ((0, 2000), (2000, 2000), (2000, 4500), (4500, n))
    for i, (a, b) in enumerate(cuts):
        (d / "csv" / f"s-{i}.csv").write_text(
            "\n".join([head, *rows[a:b]]) + "\n", encoding="utf-8"
        )
        cols = {
            "key": pa.array(keys[a:b], pa.string()),
            "frequency": pa.array(freqs[a:b], pa.int64()),
            "topic": pa.array([f"t{j % 3}" for j in range(a, b)], pa.string()),
        }
        pq.write_table(pa.table(cols), d / "pq" / f"s-{i}.parquet")
    design = str(EXAMPLES / "pws.yaml")
    common = ["pws", "sanitize", "--design", design, "--seed", "17", "--frequencies"]
    one = _ampcalc(d, *common, "all.csv", "-o", "one.csv")
    want = (d / "one.csv").read_bytes()
    assert f"sanitised {n} keys" in one
    assert 0 < want.count(b"\n") - 1 < n
    seen: list[tuple[str, int]] = []
    address = cluster["address"]
    for src, out in (("csv", "out-csv"), ("pq", "out-pq")):
        run = ["--engine", "dask", "--scheduler", address, src, "-o", out]
        err = _ampcalc(d, *common, *run, "--output-format", "csv", watch=seen)
        assert _joined(d / out) == want
        assert err.replace(out, "OUT") == one.replace("one.csv", "OUT")
    _assert_loopback(cluster, seen)
