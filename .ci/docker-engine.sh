#!/usr/bin/env bash
# A Docker engine of CI's own, and the base images the project's Dockerfiles and
# compose files name, built from Debian packages because no image registry
# is reachable here (docker pull fails; apt and PyPI work).
#
#   .ci/docker-engine.sh start   engine up, base images present; prints DOCKER_HOST
#   .ci/docker-engine.sh stop    engine down (its data root, with the images, stays)
#   .ci/docker-engine.sh status  exit status 0 when the engine is up
#
# Idempotent. The data root is outside the clone so that base images built once
# (about a minute here: debootstrap, then apt in two image builds) serve every later
# run on the machine; they are rebuilt when their files under .ci/images change.
# No system service is assumed or touched: its own socket, exec root and no
# default bridge (compose makes networks of its own; builds use the host's).
set -euo pipefail
cd "$(dirname "$0")"

STATE=${SESSION_STATE_CI_DOCKER_ROOT:-/var/lib/session-state-ci}
RUN_DIR=/run/session-state-ci
export DOCKER_HOST=unix://$RUN_DIR/docker.sock
# The legacy builder: BuildKit would pull a frontend for `# syntax=` lines.
export DOCKER_BUILDKIT=0
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
LABEL=org.session-state.ci.inputs

log() { echo "docker-engine: $*" >&2; }

engine_up() { docker info >/dev/null 2>&1; }

start_engine() {
  engine_up && return
  mkdir -p "$STATE" "$RUN_DIR"
  log "starting dockerd (data root $STATE/docker, log $STATE/dockerd.log)"
  setsid dockerd \
    --data-root "$STATE/docker" \
    --exec-root "$RUN_DIR/exec" \
    --pidfile "$RUN_DIR/docker.pid" \
    --host "$DOCKER_HOST" \
    --bridge none \
    >>"$STATE/dockerd.log" 2>&1 </dev/null 9>&- &  # 9: the start lock, not dockerd's
  for _ in $(seq 60); do engine_up && return; sleep 1; done
  log "dockerd did not answer within 60 s; last lines of its log:"
  tail -n 20 "$STATE/dockerd.log" >&2
  exit 1
}

stop_engine() {
  local pid
  pid=$(cat "$RUN_DIR/docker.pid" 2>/dev/null) || return 0
  kill -0 "$pid" 2>/dev/null || return 0
  log "stopping dockerd ($pid)"
  kill "$pid"
  for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || return 0; sleep 1; done
  log "dockerd ($pid) still running after 60 s"
  exit 1
}

image_label() { docker image inspect -f "{{index .Config.Labels \"$LABEL\"}}" "$1" 2>/dev/null; }

# A minimal Debian bookworm, from the same mirror apt uses; also tagged
# debian:bookworm, the base of deploy/patroni (docker-compose.ha.yml).
build_debian() {
  if [ -n "$(docker image ls -q session-state-ci/debian:bookworm)" ]; then
    docker tag session-state-ci/debian:bookworm debian:bookworm
    return
  fi
  local rootfs
  rootfs=$(mktemp -d "$STATE/rootfs.XXXXXX")
  log "debootstrap bookworm from $MIRROR"
  debootstrap --variant=minbase bookworm "$rootfs" "$MIRROR" >"$STATE/debootstrap.log" 2>&1 ||
    { tail -n 20 "$STATE/debootstrap.log" >&2; rm -rf "$rootfs"; exit 1; }
  # As Debian's own images: no service starts when a package is installed.
  printf '#!/bin/sh\nexit 101\n' >"$rootfs/usr/sbin/policy-rc.d"
  chmod +x "$rootfs/usr/sbin/policy-rc.d"
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8' \
    --change 'CMD ["bash"]' - session-state-ci/debian:bookworm >/dev/null
  docker tag session-state-ci/debian:bookworm debian:bookworm
  rm -rf "$rootfs"
}

# docker build of .ci/images/<directory> as <tag>, skipped when an image of
# that tag was built from the same inputs (the hash of its build context).
build_stand_in() {
  local directory=$1 tag=$2 context inputs
  context=$(mktemp -d)
  cp -a "images/$directory/." "$context"
  [ "$directory" = python ] && cp /etc/ssl/certs/ca-certificates.crt "$context"
  inputs=$(cd "$context" && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum)
  inputs=${inputs%% *}
  if [ "$(image_label "$tag")" != "$inputs" ]; then
    log "building $tag (stand-in, from .ci/images/$directory)"
    docker build --network host --label "$LABEL=$inputs" -t "$tag" "$context" \
      >"$STATE/build-$directory.log" 2>&1 || { tail -n 20 "$STATE/build-$directory.log" >&2; exit 1; }
  fi
  rm -rf "$context"
}

case ${1:-} in
  start)
    mkdir -p "$STATE"
    exec 9>"$STATE/lock"
    flock 9
    start_engine
    build_debian
    build_stand_in python python:3.11-slim
    build_stand_in postgres postgres:16
    docker image prune --force >/dev/null  # base images replaced by a rebuild
    echo "$DOCKER_HOST"
    ;;
  stop) stop_engine ;;
  status) engine_up ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
