#!/usr/bin/env bash
# docker-engine.sh install|start|stop: a Docker engine for the integration tier on a fresh machine.
#
#   install  Debian's docker.io (dockerd, containerd, runc) and bubblewrap (the local sandbox's
#            confinement), and fresh package lists, which `agent-env sandbox-image` needs to
#            download bash-static and busybox-static.
#   start    an engine, unless one already answers: loopback only (--bridge=none --iptables=false),
#            so no container can reach any network; waits until it answers.
#   stop     the engine `start` started, by its pid; an engine found running is left alone.
#
# State (the pid and the engine's log) goes to $AGENT_ENV_DOCKER_STATE (default /tmp/agent-env-dockerd).
set -euo pipefail
state=${AGENT_ENV_DOCKER_STATE:-/tmp/agent-env-dockerd}
start_s=60
stop_s=30

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

answers() {
  docker info >/dev/null 2>&1
}

case "${1:-}" in
  install)
    as_root apt-get update -qq
    if ! command -v dockerd >/dev/null || ! command -v bwrap >/dev/null; then
      as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io bubblewrap >/dev/null
    fi
    ;;
  start)
    if answers; then
      echo "docker-engine: an engine already answers; using it"
      exit 0
    fi
    mkdir -p "$state"
    rm -f "$state/pid"
    # dockerd writes its own pid: $! would be that of a subshell when sudo or a function stands between.
    as_root dockerd --bridge=none --iptables=false --pidfile "$state/pid" >"$state/dockerd.log" 2>&1 &
    for _ in $(seq "$start_s"); do
      if answers && [ -s "$state/pid" ]; then
        echo "docker-engine: started (pid $(cat "$state/pid"), log $state/dockerd.log)"
        exit 0
      fi
      sleep 1
    done
    echo "docker-engine: no answer after ${start_s} s; the engine's log:" >&2
    tail -n 30 "$state/dockerd.log" >&2
    exit 1
    ;;
  stop)
    [ -s "$state/pid" ] || exit 0
    pid=$(cat "$state/pid")
    as_root kill "$pid" 2>/dev/null || true
    for _ in $(seq "$stop_s"); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 1
    done
    if kill -0 "$pid" 2>/dev/null; then
      echo "docker-engine: pid $pid still runs after ${stop_s} s; killing it" >&2
      as_root kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$state/pid"
    echo "docker-engine: stopped (pid $pid)"
    ;;
  *)
    echo "usage: $0 install|start|stop" >&2
    exit 2
    ;;
esac
