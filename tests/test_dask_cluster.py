"""The local Dask cluster of ``--engine dask``: it listens on 127.0.0.1 only, starts a
dashboard only for ``--dashboard``, and a Ctrl-C stops the run with one line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLES, ROOT

pytest.importorskip("distributed")
psutil = pytest.importorskip("psutil")

from ampcalc.model.errors import DesignError  # noqa: E402
from ampcalc.records import distributed as D  # noqa: E402


def _listening(pid: int | None = None) -> list[tuple[str, int]]:
    """(address, port) of the listening TCP sockets of a process and its children (none
    for a process that has gone: a short-lived child can end while it is looked at)."""
    try:
        top = psutil.Process(pid)
        family = [top, *top.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []
    found = []
    for proc in family:
        try:
            conns = proc.net_connections(kind="inet")
        except psutil.NoSuchProcess:
            continue
        found += [(c.laddr.ip, c.laddr.port) for c in conns if c.status == psutil.CONN_LISTEN]
    return found


def _get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as err:
        return int(err.code)


def test_local_cluster_listens_on_loopback_and_serves_no_dashboard() -> None:
    with D.scheduler(None, 1) as client:
        assert client.submit(sum, [1, 2, 3]).result() == 6
        socks = _listening()
        # scheduler, its HTTP server and the nanny in this process, the worker's own
        assert len(socks) >= 4
        assert {ip for ip, _ in socks} == {"127.0.0.1"}
        assert client.scheduler_info()["address"].startswith("tcp://127.0.0.1:")
        http = client.cluster.scheduler.http_server
        ports = {s.getsockname()[1] for s in http._sockets.values()}
        assert 8787 not in ports  # a free port: no clash, no warning on stderr
        for port in ports:  # the HTTP server answers nothing: no JSON, no status page
            assert _get(f"http://127.0.0.1:{port}/json/counts.json") == 404
            assert _get(f"http://127.0.0.1:{port}/status") == 404


def test_dashboard_on_request_on_loopback() -> None:
    urls: list[str] = []
    with D.scheduler(None, 1, urls.append):
        assert len(urls) == 1 and urls[0].startswith("http://127.0.0.1:")
        assert {ip for ip, _ in _listening()} == {"127.0.0.1"}
        base = urls[0].rsplit("/", 1)[0]
        assert _get(f"{base}/json/counts.json") == 200


def test_dashboard_needs_a_cluster() -> None:
    with pytest.raises(DesignError, match="has no dashboard"), D.scheduler("threads", 1, print):
        pass


def _sample(root: Path, parts: int, keys: int) -> Path:
    folder = root / "sample"
    folder.mkdir()
    rows = [f"k{i:08d},{i % 5000 + 1}\n" for i in range(keys)]
    step = keys // parts
    for p in range(parts):
        text = "key,frequency\n" + "".join(rows[p * step : (p + 1) * step])
        (folder / f"part-{p}.csv").write_text(text)
    return folder


def _python_children(pid: int) -> list[Any]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def test_ctrl_c_stops_a_dask_run_with_one_line(tmp_path: Path) -> None:
    sample = _sample(tmp_path, parts=6, keys=120_000)
    # work that lasts however fast the machine: one key of frequency 300,000 per
    # partition under weight_power 0.5, whose sanitised-frequency rows are computed one
    # by one (about 5 s of CPU per table), so the Ctrl-C lands while the tasks run
    for p, part in enumerate(sorted(sample.iterdir())):
        with part.open("a") as f:
            f.write(f"heavy{p},300000\n")
    out = tmp_path / "out"
    # a terminal's Ctrl-C: SIGINT to the whole foreground process group
    args = ["pws", "sanitize", str(sample), "-d", str(EXAMPLES / "pws.yaml"), "--seed", "3"]
    args += ["--set", "sampling.weight_power=0.5"]
    args += ["--frequencies", "--engine", "dask", "--workers", "2", "-o", str(out)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "ampcalc", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        start_new_session=True,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        # the workers are up and running the tasks: both hold a listening socket
        while time.monotonic() < deadline and proc.poll() is None:
            workers = [c for c in _python_children(proc.pid) if _listening(c.pid)]
            if len(workers) >= 2:
                break
            time.sleep(0.2)
        time.sleep(1.0)
        assert proc.poll() is None, proc.communicate()
        children = _python_children(proc.pid)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err  # 128 + SIGINT (docs/cli-conventions.md)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    lines = err.strip().splitlines()
    assert len(lines) <= 2, err  # was 67 lines of worker tracebacks
    assert lines[-1].startswith("ampcalc: interrupted by SIGINT")
    assert not out.exists() or not any(out.iterdir())  # part files removed
    _, alive = psutil.wait_procs(children, timeout=30)
    assert not alive  # the cluster was closed: no worker left behind
