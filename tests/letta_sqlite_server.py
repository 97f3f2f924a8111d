"""Start the real Letta server (PyPI ``letta==0.16.8``) on SQLite, for checking the letta
adapter by hand without PostgreSQL. CI runs the real server on PostgreSQL
(tests/letta_server.py) and tests/letta_stub.py for the fast tests.

Letta 0.12 to 0.16.8 always build their database engine from ``LETTA_PG_URI``
(defaulting to a local Postgres), although their ORM still supports SQLite (letta issue
#3125; the fix, PR #3126, was never released to PyPI). This launcher, run with the
Python of a venv that holds the server, points the engine at an SQLite file, creates the
tables (0.12+ create them only with Postgres-only alembic migrations), replaces the
Postgres-only column defaults, and starts the server. It patches 0.16.8 internals:
use exactly that version. See docs/agents/letta.md for the venv and a whole session.

    LETTA_DIR=/tmp/letta OPENAI_API_KEY=sk-... OPENAI_BASE_URL=http://127.0.0.1:8000/v1 \\
        ~/letta-server/bin/python tests/letta_sqlite_server.py --port 8283

Checked on 2026-11-21 with a loopback OpenAI stub: agents, archival passages (insert,
search), messages with an ``archival_memory_search`` tool call, and deletion all work.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any


def serve(host: str, port: int) -> None:
    if os.environ.get("LETTA_PG_URI"):
        sys.exit("LETTA_PG_URI is set: this launcher is for SQLite")
    letta_dir = Path(os.environ.get("LETTA_DIR") or Path.home() / ".letta")
    letta_dir.mkdir(parents=True, exist_ok=True)
    db_path = letta_dir / "sqlite.db"
    os.chdir(letta_dir)  # the server writes openapi_letta.json into its working directory

    import letta.database_utils as dbu
    from letta.settings import DatabaseChoice, settings

    if settings.database_engine is not DatabaseChoice.SQLITE:
        sys.exit(f"letta chose {settings.database_engine}, not SQLite")
    real = dbu.get_database_uri_for_context

    def uri_for_context(uri: str, context: str = "async") -> str:
        if settings.database_engine is DatabaseChoice.SQLITE:
            return f"sqlite+aiosqlite:///{db_path}" if context == "async" else f"sqlite:///{db_path}"
        uri = real(uri, context)
        return uri

    dbu.get_database_uri_for_context = uri_for_context  # before letta.server.db builds its engine

    from sqlalchemy import create_engine, event, text
    from sqlalchemy.schema import DefaultClause

    import letta.server.db as letta_db
    from letta.orm import Base

    @event.listens_for(letta_db.engine.sync_engine, "connect")
    def _foreign_keys(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    # server_default="now()" is a plain string on SQLite, later read back as a datetime
    # ("Invalid isoformat string: 'now()'"); TRUE and FALSE likewise
    fixes = {"now()": "CURRENT_TIMESTAMP", "TRUE": "1", "FALSE": "0"}
    for table in Base.metadata.tables.values():
        for column in table.columns:
            arg = getattr(column.server_default, "arg", None)
            if isinstance(arg, str) and arg in fixes:
                DefaultClause(text(fixes[arg]))._set_parent(column)
    engine = create_engine(f"sqlite:///{db_path}")
    Base.metadata.create_all(bind=engine)
    engine.dispose()

    from letta.server.rest_api.app import start_server

    start_server(port=port, host=host)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8283)
    args = parser.parse_args()
    serve(args.host, args.port)


if __name__ == "__main__":
    main()
