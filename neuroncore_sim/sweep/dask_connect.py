"""Connecting a sweep to a Dask scheduler, with a deadline that holds.

``distributed.Client(address, timeout=...)`` does not always keep its timeout: a server that
accepts the connection and never answers holds it for many minutes, and an HTTP server (the
dashboard's port) makes it decode text as a frame length (a MemoryError asking for exabytes).
So before the client is made, :func:`connect` asks the address who it is (the scheduler's
``identity`` call) in a thread of its own, within ``timeout_s``; an address that is malformed,
that does not answer in time, or that is not a Dask scheduler is a
:class:`~neuroncore_sim.sweep.point.SweepError` saying which.
"""

from __future__ import annotations

import asyncio
import math
import threading
from typing import Any

from ..errors import expected
from .point import SweepError

#: Seconds to wait for the scheduler to answer (``connect_timeout=``, ``--connect-timeout``).
DEFAULT_CONNECT_TIMEOUT_S = 30.0


def check_timeout(timeout_s: Any) -> float:
    """``timeout_s`` as seconds, or a SweepError unless it is a finite number > 0."""
    try:
        value = float(timeout_s)
    except (TypeError, ValueError):
        value = math.nan
    if not (math.isfinite(value) and value > 0) or isinstance(timeout_s, bool):
        raise SweepError(expected("connect_timeout", "a number of seconds > 0", repr(timeout_s)))
    return value


def connect(scheduler: str, timeout_s: float) -> Any:
    """A ``distributed.Client`` of the scheduler at ``scheduler``, which answered within
    ``timeout_s`` seconds."""
    from distributed import Client

    _check_address(scheduler)
    _probe(scheduler, timeout_s)
    try:
        return Client(scheduler, timeout=f"{timeout_s}s")
    except (OSError, ValueError, TypeError, MemoryError) as e:
        raise SweepError(f"cannot reach the Dask scheduler at {scheduler}: "
                         f"{type(e).__name__}: {e}") from None


def _check_address(scheduler: Any) -> None:
    from distributed.comm.addressing import parse_address, parse_host_port

    try:
        if not isinstance(scheduler, str) or not scheduler.strip():
            raise ValueError("empty")
        protocol, location = parse_address(scheduler)
        if protocol in ("tcp", "tls"):
            host, port = parse_host_port(location)
            if not host or not 0 < int(port) < 65536:
                raise ValueError("no host, or a port outside 1-65535")
    except (ValueError, TypeError, OverflowError) as e:
        raise SweepError(expected("Dask scheduler address", "PROTOCOL://HOST:PORT, e.g. "
                                  "tcp://10.0.0.5:8786", f"{scheduler!r} ({e})")) from None


async def _identity(scheduler: str, timeout_s: float) -> Any:
    from distributed.comm import connect as open_comm

    comm = await open_comm(scheduler, timeout=timeout_s)
    try:
        await comm.write({"op": "identity", "reply": True})
        return await comm.read()
    finally:
        comm.abort()


def _probe(scheduler: str, timeout_s: float) -> None:
    """SweepError unless a Dask scheduler at ``scheduler`` says who it is within the time."""
    box: dict[str, Any] = {}

    def ask() -> None:
        try:
            box["reply"] = asyncio.run(asyncio.wait_for(_identity(scheduler, timeout_s),
                                                        timeout_s))
        except BaseException as e:  # handed to the caller below, whatever it is
            box["error"] = e

    # a thread of its own: an event loop may already run in this one (a notebook), and a name
    # lookup that hangs must not hold the caller past the deadline
    thread = threading.Thread(target=ask, name="ncs-dask-connect", daemon=True)
    thread.start()
    thread.join(timeout_s + 1.0)
    reply, error = box.get("reply"), box.get("error")
    silent = thread.is_alive() or isinstance(error, (asyncio.TimeoutError, TimeoutError))
    if isinstance(error, MemoryError) or (error is None and not _is_scheduler(reply)) or (
            silent and _speaks_http(scheduler)):
        raise SweepError(f"cannot use {scheduler}: it answered, but not as a Dask scheduler "
                         "(the dashboard's HTTP port, or another service?); expected the "
                         "scheduler's address, e.g. tcp://HOST:8786")
    if silent:
        raise SweepError(f"cannot reach the Dask scheduler at {scheduler}: no answer within "
                         f"{timeout_s:g} s (connect_timeout / --connect-timeout)")
    if error is not None:
        raise SweepError(f"cannot reach the Dask scheduler at {scheduler}: "
                         f"{type(error).__name__}: {error}")


def _speaks_http(scheduler: str) -> bool:
    """Whether a TCP address that gave Dask no answer answers an HTTP request (a web server,
    such as the dashboard, waits for a request line that Dask's handshake never sends)."""
    import socket

    from distributed.comm.addressing import parse_address, parse_host_port

    try:
        protocol, location = parse_address(scheduler)
        if protocol != "tcp":
            return False
        host, port = parse_host_port(location)
        with socket.create_connection((host, port), timeout=1.0) as conn:
            conn.sendall(b"HEAD / HTTP/1.0\r\n\r\n")
            return conn.recv(5) == b"HTTP/"
    except (OSError, ValueError):
        return False


def _is_scheduler(reply: Any) -> bool:
    return isinstance(reply, dict) and reply.get("type") == "Scheduler"
