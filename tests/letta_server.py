"""The real Letta server (PyPI ``letta==0.16.8``) on PostgreSQL with pgvector, started and
stopped for the letta adapter's integration tests (tests/integration/test_letta_server.py).

It runs the server as its users do, as Letta's Docker image does: a PostgreSQL cluster
with the ``vector`` extension in a ``letta`` schema (the image's init.sql), the release's
alembic migrations (``alembic upgrade head``), then ``letta server``. Here the cluster is
a throwaway one (``initdb`` into a temporary folder, ``pg_ctl start`` on a free loopback
port and a Unix socket in that folder, which the server uses; run as the ``postgres`` user
when you are root), and the server's LLM and embeddings are
an OpenAI-compatible URL (tests/openai_stub.py in the tests). Nothing else is reached:
no telemetry exporter is configured, the server's HTTP proxy is a closed loopback port
(only loopback bypasses it), and the server's home is a temporary folder.

tests/letta_server_setup.sh installs what it needs (Debian's PostgreSQL 15, pgvector,
and the server's own virtual environment). By hand, for trying the adapter:

    bash tests/letta_server_setup.sh
    python tests/openai_stub.py --port 8777 --embed-dim 1536 &
    python tests/letta_server.py --port 8283 --llm-base-url http://127.0.0.1:8777/v1
"""

from __future__ import annotations

import argparse
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

VERSION = "0.16.8"
PG_BIN = Path(os.environ.get("MEMPLUG_PG_BIN") or "/usr/lib/postgresql/15/bin")
VENV = Path(
    os.environ.get("MEMPLUG_LETTA_SERVER")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "memplug" / f"letta-server-{VERSION}"
)
SETUP = "bash tests/letta_server_setup.sh"
#: the server's HTTP proxy: a loopback port nothing listens on (the discard port)
NO_NETWORK = "http://127.0.0.1:9"


def missing() -> str | None:
    """Why the server cannot be started on this machine (naming the setup command), or None."""
    if not (VENV / ".memplug-ready").is_file() or not (VENV / "bin" / "letta").is_file():
        return f"no Letta server venv at {VENV}; {SETUP} installs it"
    for tool in ("initdb", "pg_ctl", "postgres", "psql"):
        if not (PG_BIN / tool).is_file():
            return f"no PostgreSQL at {PG_BIN} ({tool}); {SETUP} installs it"
    # the extension's control file lies in the server's share folder (Debian: /usr/share/postgresql/15)
    share = Path("/usr/share/postgresql") / PG_BIN.parent.name
    if not (share / "extension" / "vector.control").is_file():
        return f"no pgvector in {share / 'extension'}; {SETUP} builds it"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def tail(path: Path, lines: int = 60) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError as exc:
        return f"({path}: {exc})"


class Postgres:
    """A throwaway PostgreSQL cluster on a loopback port, with the database Letta expects."""

    def __init__(self, folder: Path, port: int = 0) -> None:
        self.folder = folder
        self.port = port or free_port()
        self.data = folder / "data"
        self.log = folder / "postgres.log"
        self.uri = f"postgresql://letta:letta@127.0.0.1:{self.port}/letta"
        #: the same database through its Unix socket, for the server (asyncpg takes the socket's
        #: folder as ?host=). Over loopback TCP, the server opens one connection per session
        #: (its default NullPool, about 30 a second), and on the machines here one connect in a
        #: few hundred hung until asyncpg's 60 s timeout (docs/agents/letta.md).
        self.socket_uri = f"postgresql://letta:letta@localhost:{self.port}/letta?host={folder}"
        # initdb and postgres refuse to run as root: then the cluster is the postgres user's
        self.user = "postgres" if os.geteuid() == 0 else None

    def _run(self, *cmd: str, stdin: str | None = None) -> None:
        full = ["runuser", "-u", self.user, "--", *cmd] if self.user else list(cmd)
        done = subprocess.run(full, input=stdin, capture_output=True, text=True, timeout=120, cwd=self.folder)
        if done.returncode != 0:
            raise RuntimeError(
                f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout}{done.stderr}\n"
                f"postgres log:\n{tail(self.log)}"
            )

    def start(self) -> "Postgres":
        if self.user:
            pw = pwd.getpwnam(self.user)
            os.chown(self.folder, pw.pw_uid, pw.pw_gid)
        self._run(
            str(PG_BIN / "initdb"),
            "-D",
            str(self.data),
            "-U",
            "letta",
            "--auth=trust",
            "-E",
            "UTF8",
            "--locale=C.UTF-8",
        )
        self._run(
            str(PG_BIN / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.log),
            "-w",
            "-t",
            "60",
            "-o",
            f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1",
            "start",
        )
        # Letta's init.sql (its Docker image runs it on a new cluster): a `letta` schema that
        # holds the vector extension, as the database's search path
        self._run(
            str(PG_BIN / "psql"),
            "-h",
            "127.0.0.1",
            "-p",
            str(self.port),
            "-U",
            "letta",
            "-d",
            "postgres",
            "-v",
            "ON_ERROR_STOP=1",
            "-q",
            stdin="""
            CREATE DATABASE letta;
            \\c letta
            CREATE SCHEMA letta AUTHORIZATION letta;
            ALTER DATABASE letta SET search_path TO letta;
            CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA letta;
            DROP SCHEMA IF EXISTS public CASCADE;
        """,
        )
        return self

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            try:
                self._run(str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")
            except (RuntimeError, subprocess.TimeoutExpired):
                pass


class LettaServer:
    """Postgres, the migrations and ``letta server`` on loopback; ``base_url`` once started.

        with LettaServer(llm_base_url=stub.base_url) as server:
            ... LETTA_BASE_URL=server.base_url ...

    A failed start raises RuntimeError with the tail of the step's log. The server's own log
    is ``server.log`` (kept in ``folder`` until the context closes).
    """

    def __init__(
        self, llm_base_url: str, port: int = 0, startup_timeout: float = 240.0, llm_api_key: str = "sk-letta-test"
    ) -> None:
        self.llm_base_url = llm_base_url
        #: the key the server sends the LLM endpoint (memplug's local model checks its own)
        self.llm_api_key = llm_api_key
        self.port = port or free_port()
        self.startup_timeout = startup_timeout
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.folder = Path(tempfile.mkdtemp(prefix="memplug-letta-"))
        self.log = self.folder / "letta-server.log"
        self.postgres = Postgres(self.folder)
        self.process: subprocess.Popen[bytes] | None = None
        #: seconds each step took: postgres, migrations, server
        self.timings: dict[str, float] = {}

    def env(self, migrations: bool = False) -> dict[str, str]:
        """The server's environment: made from scratch, so no key or endpoint of the caller leaks in."""
        home = self.folder / "home"
        home.mkdir(exist_ok=True)
        loopback = "127.0.0.1,localhost"
        return {
            "PATH": f"{VENV / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "HOME": str(home),  # Letta writes ~/.letta (its config, its tool sandbox folder)
            "LANG": "C.UTF-8",
            # alembic's driver (pg8000) takes no socket folder: it connects over loopback TCP
            "LETTA_PG_URI": self.postgres.uri if migrations else self.postgres.socket_uri,
            # the OpenAI provider, at the given OpenAI-compatible URL: its models are then
            # named openai-proxy/<id> (the adapter's -o model=)
            "OPENAI_API_KEY": self.llm_api_key,
            "OPENAI_BASE_URL": self.llm_base_url,
            # Outbound HTTP goes to a closed loopback port, so it fails at once and never leaves
            # the machine. The one attempt seen is at start-up: nltk.download("punkt_tab"),
            # which Letta logs as an error before it goes on.
            **{
                name: NO_NETWORK
                for name in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
            },
            "no_proxy": loopback,
            "NO_PROXY": loopback,
            "PYTHONUNBUFFERED": "1",
        }

    def start(self) -> "LettaServer":
        env = self.env()
        t0 = time.monotonic()
        self.postgres.start()
        t1 = time.monotonic()
        migrations = VENV / "letta-migrations"
        with open(self.folder / "alembic.log", "w") as out:
            done = subprocess.run(
                [str(VENV / "bin" / "alembic"), "upgrade", "head"],
                cwd=migrations,
                env=self.env(migrations=True),
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=300,
            )
        if done.returncode != 0:
            raise RuntimeError(f"alembic upgrade head failed ({done.returncode}):\n{tail(self.folder / 'alembic.log')}")
        t2 = time.monotonic()
        with open(self.log, "w") as out:
            self.process = subprocess.Popen(
                [str(VENV / "bin" / "letta"), "server", "--host", "127.0.0.1", "--port", str(self.port)],
                cwd=env["HOME"],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + self.startup_timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"letta server exited ({self.process.returncode}) before it was healthy:\n{tail(self.log)}"
                )
            try:
                with urllib.request.urlopen(f"{self.base_url}/v1/health/", timeout=5) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"letta server not healthy after {self.startup_timeout:.0f} s:\n{tail(self.log)}")
            time.sleep(0.5)
        self.timings = {"postgres_s": t1 - t0, "migrations_s": t2 - t1, "server_s": time.monotonic() - t2}
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)  # its own session: uvicorn and any workers
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        self.postgres.stop()

    def close(self) -> None:
        """Stop both servers and remove their folder (kept, with its logs, if MEMPLUG_LETTA_KEEP=1)."""
        try:
            self.stop()
        finally:
            if os.environ.get("MEMPLUG_LETTA_KEEP") == "1":
                print(f"letta server logs kept in {self.folder}")
            else:
                shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> "LettaServer":
        try:
            return self.start()
        except BaseException:
            self.close()
            raise

    def __exit__(self, *exc: object) -> None:
        self.close()


def main() -> None:
    parser = argparse.ArgumentParser(description="the real Letta server on a throwaway PostgreSQL cluster")
    parser.add_argument("--port", type=int, default=8283)
    parser.add_argument("--llm-base-url", required=True, help="an OpenAI-compatible URL, e.g. http://127.0.0.1:8777/v1")
    args = parser.parse_args()
    reason = missing()
    if reason:
        raise SystemExit(reason)
    with LettaServer(args.llm_base_url, port=args.port) as server:
        print(
            f"Letta {VERSION} at {server.base_url} (log: {server.log}; {server.timings}); Ctrl-C stops it", flush=True
        )
        assert server.process is not None  # started by __enter__
        try:
            server.process.wait()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
