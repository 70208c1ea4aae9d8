"""Running the campaign server: in this process (``sampleval serve``), or as a child
process that ``campaign simulate``, the tests and the benchmarks start, stop and kill."""

from __future__ import annotations

import atexit
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from sampleval.errors import UsageError

SWITCH_INTERVAL = 0.0005
"""Seconds a thread holding the interpreter lock runs before handing it to a thread that
waits for it (``sys.setswitchinterval``; Python's default is 5 ms), in the server. A thread
that lets the lock go for a system call (a commit's write and flush, a socket's read, a
wait for the group commit) waits on its return until the holder's interval is up: with a
thread computing (``dynamic``'s classifier fit, a state's encoding), up to 5 ms per call
at the default, and a judgment's path makes some tens of such calls (the convoy effect;
docs/research/campaign-load.md measures it). A shorter interval costs the computing thread
a switch more often, a few microseconds each."""


def serve(url: str, host: str = "127.0.0.1", port: int = 8000, refresh: float = 2.0,
          public_url: str | None = None, trusted_proxies: Sequence[str] = ()) -> None:
    """Serve the store at ``url`` until interrupted (one process: the selectors live in
    it); ``public_url`` and ``trusted_proxies`` as :func:`~.app.create_app` takes them."""
    single_threaded_blas()
    sys.setswitchinterval(SWITCH_INTERVAL)
    import uvicorn

    from sampleval.campaign.app import create_app

    app = create_app(url, interval=refresh, public_url=public_url,
                     trusted_proxies=trusted_proxies, freeze=True)
    single_threaded_blas()  # the libraries the app's imports loaded
    reached = public_url or base_url(host, port)
    sys.stderr.write(f"sampleval: serving campaigns of {url} on {base_url(host, port)}/ "
                     f"(Ctrl-C stops); assessors log in at {reached}/login?token=TOKEN"
                     + ("" if reached == base_url("127.0.0.1", 8000) else
                        f" ('campaign create' and 'add-assessor' print such links with "
                        f"--base-url {reached})") + "\n")
    # forwarded headers are read by the app, from --trusted-proxy only (web.Guard)
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False,
                timeout_graceful_shutdown=5, proxy_headers=False)


def single_threaded_blas() -> None:
    """BLAS on one thread in this process and in the processes it starts from now on (the
    live-estimates worker): the selectors' matrices are small, and a threaded BLAS on a
    machine whose cores are busy waits on its own threads, inside a request and under the
    campaign's lock (``dynamic``'s learner most: benchmarks/README.md; experiments' trials
    limit it the same way)."""
    from threadpoolctl import threadpool_limits

    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = "1"
    threadpool_limits(limits=1, user_api="blas")


def base_url(host: str, port: int) -> str:
    """``http://HOST:PORT`` as a browser reaches a server listening there (IPv6 in
    brackets; listening on every address, the machine's name)."""
    if host in ("0.0.0.0", "::", ""):
        host = socket.getfqdn()
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on now."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
        return port


PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int = signal.SIGTERM) -> Callable[[], None] | None:
    """A ``preexec_fn`` for :class:`subprocess.Popen`: the child is sent ``sig`` when the
    thread that started it dies, however it dies (Linux's ``PR_SET_PDEATHSIG``; None
    elsewhere), so that a test run or a command killed with SIGKILL leaves no server
    behind. Start such children from a thread that lives as long as they should."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    parent = os.getpid()

    def arm() -> None:
        libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the signal was armed
            os.kill(os.getpid(), sig)

    return arm


class ServerProcess:
    """``sampleval serve`` in a child process, on a free port of 127.0.0.1. It stops with
    :meth:`stop`, at this interpreter's exit (atexit), and when this process dies
    (:func:`die_with_parent`)."""

    def __init__(self, db: str, port: int | None = None, refresh: float = 2.0,
                 log: Path | None = None, options: Sequence[str] = ()) -> None:
        self.db = db
        self.options = list(options)
        """More options of ``sampleval serve`` (``--public-url URL`` ...)."""
        self.port = port or free_port()
        self.refresh = refresh
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 120.0) -> ServerProcess:
        """Start the server and wait until it answers."""
        import httpx

        command = [sys.executable, "-m", "sampleval", "serve", "--db", self.db, "--port",
                   str(self.port), "--refresh", str(self.refresh), *self.options]
        out = self.log.open("ab") if self.log else subprocess.DEVNULL
        self.process = subprocess.Popen(command, stdout=out, stderr=out,
                                        env={**os.environ, "PYTHONUNBUFFERED": "1"},
                                        preexec_fn=die_with_parent())
        atexit.register(self.stop)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise UsageError(f"the campaign server stopped at start (exit code "
                                 f"{self.process.returncode})"
                                 + (f"; see {self.log}" if self.log else ""))
            try:
                if httpx.get(f"{self.url}/api/health", timeout=1.0).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        self.stop()
        raise UsageError(f"the campaign server did not answer within {timeout:.0f} s")

    def stop(self) -> None:
        """Stop gracefully (SIGTERM), killing it if it does not stop in 20 s."""
        atexit.unregister(self.stop)
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        """SIGKILL: the server dies at once, as in a crash."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()
