#!/usr/bin/env bash
# Installs what tests/integration/test_letta_server.py needs to run the real Letta server
# (letta==0.16.8) as its users do, on PostgreSQL with pgvector. Idempotent; run as root
# (apt-get, make install). .ci/run calls it; by hand: `bash tests/letta_server_setup.sh`.
#
#  1. PostgreSQL 15 and its server headers, Debian's packages.
#  2. pgvector. Debian 12 (bookworm) has no postgresql-15-pgvector package (pgvector came to
#     Debian in 13): this builds Debian's own source package `pgvector` (from trixie, fetched
#     with `apt-get source` from the mirror this machine already uses, with a private apt
#     state that leaves the machine's sources alone) against PostgreSQL 15, without
#     -march=native as Debian's patch does, and installs it into PostgreSQL 15's folders.
#  3. The server's own virtual environment ($MEMPLUG_LETTA_SERVER, default
#     ~/.cache/memplug/letta-server-0.16.8, outside the checkout and kept between runs):
#     letta[server,postgres]==0.16.8 with every dependency pinned by
#     tests/letta_server_constraints.txt, installed with uv (pip's resolver took 4.5 min
#     for the same set, uv 0.5-1.5 min), and the release's alembic migrations from its
#     sdist (the wheel lacks them; Letta's Docker image runs `alembic upgrade head` before
#     the server, and so does tests/letta_server.py).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
version=0.16.8
venv="${MEMPLUG_LETTA_SERVER:-${XDG_CACHE_HOME:-$HOME/.cache}/memplug/letta-server-$version}"
pg=15
pgbin=/usr/lib/postgresql/$pg/bin
constraints="$root/tests/letta_server_constraints.txt"

say() { echo "letta server setup: $*"; }
fail() { echo "letta server setup failed: $*" >&2; exit 1; }

# 1. PostgreSQL: what step 2 builds with is checked, not a neighbour of it. A machine may carry
#    Debian's postgresql-15 (initdb, pg_config) without postgresql-server-dev-15 (postgres.h).
have_headers() {
  [ -x "$pgbin/pg_config" ] && [ -f "$("$pgbin/pg_config" --includedir-server)/postgres.h" ] \
    && [ -f "$("$pgbin/pg_config" --pgxs)" ]
}
if [ ! -x "$pgbin/initdb" ] || ! have_headers || ! command -v make >/dev/null || ! command -v gcc >/dev/null; then
  say "apt-get install postgresql-$pg postgresql-server-dev-$pg make gcc"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "postgresql-$pg" "postgresql-server-dev-$pg" make gcc >/dev/null
fi
[ -x "$pgbin/initdb" ] || fail "no $pgbin/initdb after installing postgresql-$pg"
have_headers || fail "no PostgreSQL $pg server headers (postgres.h) after installing postgresql-server-dev-$pg"
# Debian's package starts its own cluster on port 5432; the tests start theirs on a free port
# and never use it.

# 2. pgvector
sharedir="$("$pgbin/pg_config" --sharedir)"
pkglibdir="$("$pgbin/pg_config" --pkglibdir)"
if [ ! -f "$sharedir/extension/vector.control" ] || [ ! -f "$pkglibdir/vector.so" ]; then
  work="$(mktemp -d)"
  codename="$(. /etc/os-release && echo "$VERSION_CODENAME")"
  mirror="$(apt-get indextargets --format '$(REPO_URI) $(RELEASE)' | awk -v c="$codename" '$2 == c {print $1; exit}')"
  [ -n "$mirror" ] || fail "no Debian mirror for $codename in apt's sources"
  mkdir -p "$work/lists/partial" "$work/cache/archives/partial"
  echo "deb-src $mirror trixie main" > "$work/sources.list"
  apt_private=(-o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
               -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache")
  say "building pgvector from Debian's source package (trixie) for PostgreSQL $pg"
  apt-get "${apt_private[@]}" update -qq
  (cd "$work" && apt-get "${apt_private[@]}" source --download-only pgvector 2>&1 | grep -v "^W: Download is performed unsandboxed" || true)
  compgen -G "$work/pgvector_*.orig.tar.gz" >/dev/null || fail "apt-get source pgvector (trixie) downloaded nothing"
  tar xzf "$work"/pgvector_*.orig.tar.gz -C "$work"
  src="$(find "$work" -maxdepth 1 -type d -name 'pgvector-*' | head -1)"
  make -s -C "$src" PG_CONFIG="$pgbin/pg_config" OPTFLAGS="" >/dev/null || fail "pgvector did not build"
  make -s -C "$src" PG_CONFIG="$pgbin/pg_config" OPTFLAGS="" install >/dev/null || fail "pgvector did not install"
  say "pgvector $(sed -n "s/^default_version = '\(.*\)'/\1/p" "$src/vector.control") installed"
  rm -rf "$work"
fi
[ -f "$sharedir/extension/vector.control" ] && [ -f "$pkglibdir/vector.so" ] \
  || fail "pgvector is not in PostgreSQL $pg's folders ($sharedir/extension/vector.control, $pkglibdir/vector.so)"

# 3. the server's virtual environment
stamp="letta $version $(grep -v '^#' "$constraints" | sha256sum | cut -c1-16)"  # the pins, not the comments
if [ "$(cat "$venv/.memplug-ready" 2>/dev/null)" != "$stamp" ] || [ ! -x "$venv/bin/letta" ] || [ ! -f "$venv/letta-migrations/alembic.ini" ]; then
  say "installing letta[server,postgres]==$version into $venv"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip uv
  "$venv/bin/uv" pip install -q --python "$venv/bin/python" -c "$constraints" "letta[server,postgres]==$version"
  # the migrations: alembic.ini and alembic/ of the release's sdist
  dl="$(mktemp -d)"
  "$venv/bin/pip" download -q --no-deps --no-binary :all: -d "$dl" "letta==$version"
  tar xzf "$dl/letta-$version.tar.gz" -C "$dl" "letta-$version/alembic.ini" "letta-$version/alembic"
  mv "$dl/letta-$version" "$venv/letta-migrations"
  rm -rf "$dl"
  echo "$stamp" > "$venv/.memplug-ready"
fi
got="$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("letta"))' 2>/dev/null)" \
  || fail "the server venv $venv cannot import letta"
[ "$got" = "$version" ] || fail "the server venv $venv has letta $got, not $version"
say "ready: $venv (letta $got)"
