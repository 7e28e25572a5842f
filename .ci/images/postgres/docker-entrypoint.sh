#!/bin/sh
# The official postgres image's entrypoint, reduced to what compose uses: as
# root, own the data directory and drop to the postgres user; on an empty data
# directory, initialise it with POSTGRES_USER / POSTGRES_PASSWORD / POSTGRES_DB,
# local connections trusted and the network ones checked with scram-sha-256.
set -eu

if [ "$1" = postgres ] && [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA"
  chown -R postgres:postgres "$PGDATA"
  chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi

if [ "$1" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
  : "${POSTGRES_PASSWORD:?is required, as by the official image}"
  user=${POSTGRES_USER:-postgres}
  database=${POSTGRES_DB:-$user}
  password_file=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" >"$password_file"
  initdb --username="$user" --pwfile="$password_file" --encoding=UTF8 --locale=C.UTF-8 \
    --auth-local=trust --auth-host=scram-sha-256 --pgdata="$PGDATA"
  rm -f "$password_file"
  echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  if [ "$database" != postgres ]; then
    echo "CREATE DATABASE \"$database\" OWNER \"$user\"" |
      postgres --single -D "$PGDATA" postgres >/dev/null
  fi
fi

exec "$@"
