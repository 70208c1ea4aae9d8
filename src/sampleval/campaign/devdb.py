"""A throwaway PostgreSQL server for tests, benchmarks and trying campaigns out.

Uses the PostgreSQL binaries of the machine (Debian's ``postgresql`` package puts them in
``/usr/lib/postgresql/VERSION/bin``): ``initdb`` a cluster in a fresh temporary directory,
start ``postgres`` on a free port of 127.0.0.1 with its socket in that directory, and
remove it all on :meth:`LocalPostgres.stop`. PostgreSQL refuses to run as root, so as root
the server runs as the ``postgres`` system user (the Debian package creates it).

The server never outlives its starter: :meth:`~LocalPostgres.stop` runs at the interpreter's
exit too (atexit), and the postmaster gets SIGINT (fast shutdown) when the process that
started it dies, even by SIGKILL (:func:`~sampleval.campaign.server.die_with_parent`).
"""

from __future__ import annotations

import atexit
import glob
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from sampleval.campaign.server import die_with_parent, free_port
from sampleval.errors import UsageError


def postgres_bin() -> Path | None:
    """The directory of ``initdb`` and ``postgres`` (newest version), or None."""
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                      key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit()
                      else 0)
    return Path(versions[-1]).parent if versions else None


class LocalPostgres:
    """A PostgreSQL server of its own (see the module docstring). ``fsync=False`` trades
    durability on power loss for speed (tests: the server's default is then also
    ``synchronous_commit=off``, which the store overrides in its sessions); benchmarks keep
    it on."""

    def __init__(self, fsync: bool = True) -> None:
        self.fsync = fsync
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="sampleval-pg-"))
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://sampleval@127.0.0.1:{self.port}/postgres"

    def _as_owner(self) -> dict[str, Any]:
        """Popen's arguments that run a command as the ``postgres`` user when root."""
        if os.geteuid() != 0:
            return {}
        import pwd

        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            raise UsageError("PostgreSQL cannot run as root and there is no postgres "
                             "user (Debian's postgresql package creates it)") from None
        shutil.chown(self.root, owner.pw_uid, owner.pw_gid)
        return {"user": owner.pw_uid, "group": owner.pw_gid, "extra_groups": []}

    def start(self, timeout: float = 60.0, attempts: int = 5) -> LocalPostgres:
        """Initialise the cluster and start its server. The port is picked free before the
        server binds it, so another process (another test session's server) may take it in
        between: then the server cannot bind, or a connection would reach the other one;
        either way the start is tried again on a fresh port (``attempts`` in all)."""
        binaries = postgres_bin()
        if binaries is None:
            raise UsageError("no PostgreSQL server binaries (Debian: apt-get install "
                             "postgresql)")
        owner = self._as_owner()
        data = self.root / "data"
        subprocess.run([str(binaries / "initdb"), "-D", str(data), "-U", "sampleval",
                        "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"],
                       check=True, capture_output=True, **owner)
        atexit.register(self.stop)
        for _ in range(attempts):
            if self._serve(binaries, data, owner, timeout):
                return self
            self.port = free_port()
        self.stop()
        raise UsageError(f"PostgreSQL found no free port in {attempts} attempts; see "
                         f"{self.root}/server.log")

    def _serve(self, binaries: Path, data: Path, owner: dict[str, Any], timeout: float) -> bool:
        """Start the server on :attr:`port` and wait until it answers; False if the port
        was taken (the server stopped, or another cluster answers there)."""
        import psycopg

        logged = self.root / "server.log"
        before = logged.stat().st_size if logged.exists() else 0
        log = logged.open("ab")
        durable = "on" if self.fsync else "off"
        self.process = subprocess.Popen(
            [str(binaries / "postgres"), "-D", str(data), "-p", str(self.port),
             "-h", "127.0.0.1", "-k", str(self.root), "-c", f"fsync={durable}",
             "-c", f"synchronous_commit={durable}", "-c", "max_connections=200",
             "-c", "shared_buffers=128MB"],
            stdout=log, stderr=log, preexec_fn=die_with_parent(signal.SIGINT), **owner)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                if b"could not bind" in logged.read_bytes()[before:]:
                    return False
                raise UsageError(f"PostgreSQL stopped at start; see {self.root}/server.log")
            try:
                with psycopg.connect(f"host=127.0.0.1 port={self.port} user=sampleval "
                                     f"dbname=postgres", connect_timeout=2) as connection:
                    answered = connection.execute("SHOW data_directory").fetchone()
            except psycopg.OperationalError:
                time.sleep(0.2)
                continue
            if answered is not None and Path(str(answered[0])).resolve() == data.resolve():
                return True
            self._halt()  # another session's server answers on this port
            return False
        self.stop()
        raise UsageError(f"PostgreSQL did not start within {timeout:.0f} s")

    def fresh_database(self, name: str) -> str:
        """A new empty database on this server; its URL."""
        import psycopg

        with psycopg.connect(f"host=127.0.0.1 port={self.port} user=sampleval "
                             f"dbname=postgres", autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return f"postgresql+psycopg://sampleval@127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        """Fast shutdown (SIGINT to the postmaster: clients are cut off), then remove the
        cluster."""
        atexit.unregister(self.stop)
        self._halt()
        shutil.rmtree(self.root, ignore_errors=True)

    def _halt(self) -> None:
        """Stop the server process, if running (fast shutdown; killed after 30 s)."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> LocalPostgres:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()
