"""Dask scheduler addresses that are wrong (issue 25, class 4): a malformed address, a server
that accepts and never answers, an HTTP server (the dashboard's port), a closed port. Each is a
SweepError saying which, within the connect timeout (default 30 s, ``connect_timeout=`` /
``--connect-timeout``), never a hang, a MemoryError or a ValueError traceback. Real sockets on
127.0.0.1."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

from neuroncore_sim.sweep.dask_connect import DEFAULT_CONNECT_TIMEOUT_S
from neuroncore_sim.sweep.point import SweepError
from neuroncore_sim.sweep.run import sweep

from .faults import REPO, kernel_file

pytest.importorskip("distributed")


def _server(answer: bytes | None, request_end: bytes = b"") -> Iterator[str]:
    """A TCP server on 127.0.0.1 that accepts every connection, then answers ``answer`` to
    whatever it is sent (None: never answers), or once it received ``request_end`` (an HTTP
    server waits for the blank line that ends a request); its address."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            held.append(conn)
            threading.Thread(target=reply, args=(conn,), daemon=True).start()

    def reply(conn: socket.socket) -> None:
        if answer is None:
            return
        got = b""
        try:
            while request_end not in got or not got:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                got += chunk
            conn.sendall(answer)
        except OSError:
            return

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"tcp://127.0.0.1:{srv.getsockname()[1]}"
    stop.set()
    thread.join(2)
    for conn in held:
        conn.close()
    srv.close()


@pytest.fixture
def silent() -> Iterator[str]:
    yield from _server(None)


@pytest.fixture
def http() -> Iterator[str]:
    yield from _server(b"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\n"
                       b"Content-Length: 9\r\n\r\nnot found")


@pytest.fixture
def web_server() -> Iterator[str]:
    """Like the dashboard's: answers only a whole HTTP request, so Dask's handshake hangs."""
    yield from _server(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n",
                       request_end=b"\r\n\r\n")


@pytest.fixture
def k(tmp_path: Path) -> Path:
    return kernel_file(tmp_path)


def _sweep(k: Path, scheduler: str, **kw):
    return sweep(str(k), {"cols": [16]}, executor="dask", scheduler=scheduler, **kw)


def test_the_default_timeout_is_at_most_30_s() -> None:
    assert 0 < DEFAULT_CONNECT_TIMEOUT_S <= 30


def test_a_server_that_never_answers_fails_within_the_timeout(k, silent) -> None:
    start = time.monotonic()
    with pytest.raises(SweepError, match=r"no answer within 1 s"):
        _sweep(k, silent, connect_timeout=1)
    assert time.monotonic() - start < 4


def test_an_http_server_is_not_a_scheduler(k, http) -> None:
    with pytest.raises(SweepError, match="not as a Dask scheduler"):
        _sweep(k, http, connect_timeout=5)


def test_a_web_server_that_waits_for_a_request_is_not_a_scheduler(k, web_server) -> None:
    start = time.monotonic()
    with pytest.raises(SweepError, match="not as a Dask scheduler"):
        _sweep(k, web_server, connect_timeout=1)
    assert time.monotonic() - start < 4


def test_a_closed_port_cannot_be_reached(k) -> None:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there now
    start = time.monotonic()
    with pytest.raises(SweepError, match=f"cannot reach the Dask scheduler at tcp://127.0.0.1:{port}"):
        _sweep(k, f"tcp://127.0.0.1:{port}", connect_timeout=2)
    assert time.monotonic() - start < 5


@pytest.mark.parametrize("address", ["tcp://127.0.0.1:notaport", "tcp://127.0.0.1:99999",
                                     "tcp://:8786", "nosuchproto://x:1", "   ", "tcp://[::1"])
def test_a_malformed_address_is_said_at_once(k, address: str) -> None:
    start = time.monotonic()
    with pytest.raises(SweepError, match="Dask scheduler address|cannot reach|cannot use"):
        _sweep(k, address, connect_timeout=2)
    assert time.monotonic() - start < 4


@pytest.mark.parametrize("value", [0, -1, float("nan"), float("inf"), "soon", True])
def test_a_bad_connect_timeout_is_refused(k, value) -> None:
    with pytest.raises(SweepError, match="connect_timeout"):
        sweep(str(k), {"cols": [16]}, workers=1, connect_timeout=value)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "neuroncore_sim", "sweep", *args],
                          capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})


@pytest.mark.parametrize("server,message", [("silent", "no answer within 1 s"),
                                            ("http", "not as a Dask scheduler"),
                                            (None, "Dask scheduler address")])
def test_the_command_line_says_it_in_one_line(k, request, server, message) -> None:
    address = request.getfixturevalue(server) if server else "tcp://127.0.0.1:notaport"
    done = _cli(str(k), "--param", "cols=16", "--executor", "dask", "--scheduler", address,
                "--connect-timeout", "1", "--no-progress")
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], \
        done.stderr


def test_a_bad_connect_timeout_is_a_usage_error(k) -> None:
    bad = _cli(str(k), "--param", "cols=16", "--connect-timeout", "0")
    assert bad.returncode == 2 and "expected a number of seconds > 0" in bad.stderr
