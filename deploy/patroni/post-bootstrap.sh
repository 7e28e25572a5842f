#!/bin/sh
# Patroni's post_bootstrap, run once on the first primary with a connection
# string as its argument: the API's role and database.
set -eu
: "${API_DATABASE_USER:=session_state}"
: "${API_DATABASE_PASSWORD:?is required}"
: "${API_DATABASE_NAME:=session_state}"
psql "$1" -v ON_ERROR_STOP=1 -v user="$API_DATABASE_USER" \
  -v password="$API_DATABASE_PASSWORD" -v database="$API_DATABASE_NAME" <<'SQL'
CREATE ROLE :"user" LOGIN PASSWORD :'password';
CREATE DATABASE :"database" OWNER :"user";
SQL
