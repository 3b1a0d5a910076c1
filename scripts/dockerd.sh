#!/usr/bin/env bash
# Start or stop a Docker daemon for the docker sandbox (docs/sandbox.md), as root:
#   scripts/dockerd.sh start   starts dockerd when no daemon answers, and records its pid
#   scripts/dockerd.sh stop    stops the daemon that `start` started (by that pid), and only it
#   scripts/dockerd.sh around CMD...   start, run CMD, stop; exits with CMD's status (`make test`
#                              with the docker extra: every docker test module finds the daemon up,
#                              so none starts or stops one while another runs)
# The options are those measured on the project's machines: the overlay2 storage driver (vfs
# where overlay2 cannot start), no iptables rules and no bridge (sandbox containers run with
# --network none).
# DOCKERD_STATE (default /tmp/heavygym-dockerd) holds the pid file and the daemon's log.
set -euo pipefail

STATE="${DOCKERD_STATE:-/tmp/heavygym-dockerd}"
PIDFILE="$STATE/dockerd.pid"
LOG="$STATE/dockerd.log"
say() { printf '\033[1m[dockerd]\033[0m %s\n' "$*"; }
answers() { docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

case "${1:-}" in
    start)
        if answers; then
            say "a daemon already answers (${DOCKER_HOST:-unix:///var/run/docker.sock}): nothing started"
            exit 0
        fi
        command -v dockerd >/dev/null || { say "no dockerd: HEAVYGYM_EXTRAS=docker scripts/setup.sh installs docker.io"; exit 1; }
        [[ $(id -u) -eq 0 ]] || { say "dockerd needs root: run this as root, or point DOCKER_HOST at a running daemon"; exit 1; }
        mkdir -p "$STATE"
        # overlay2 where the data root's filesystem takes it (a container starts in milliseconds),
        # else vfs, which works on any filesystem but copies the whole image for every container.
        for driver in overlay2 vfs; do
            dockerd --storage-driver="$driver" --iptables=false --bridge=none >"$LOG" 2>&1 &
            echo $! >"$PIDFILE"
            for _ in $(seq 1 60); do
                if answers; then say "dockerd started (pid $(cat "$PIDFILE"), storage $driver, log $LOG)"; exit 0; fi
                kill -0 "$(cat "$PIDFILE")" 2>/dev/null || break
                sleep 0.5
            done
            if kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then break; fi  # running but not answering: not the driver
            say "dockerd did not start with the $driver storage driver; its log ends with:"
            tail -n 5 "$LOG" >&2 || true
        done
        say "dockerd did not answer within 30 s; its log ($LOG) ends with:"
        tail -n 20 "$LOG" >&2 || true
        kill "$(cat "$PIDFILE")" 2>/dev/null || true
        rm -f "$PIDFILE"
        exit 1
        ;;
    stop)
        if [[ ! -f "$PIDFILE" ]]; then
            say "no daemon started by this script ($PIDFILE missing): nothing stopped"
            exit 0
        fi
        pid="$(cat "$PIDFILE")"
        if kill -0 "$pid" 2>/dev/null; then
            kill "$pid"
            for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
            kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
            say "dockerd (pid $pid) stopped"
        fi
        rm -f "$PIDFILE"
        ;;
    around)
        shift
        [[ $# -gt 0 ]] || { echo "usage: $0 around CMD..." >&2; exit 2; }
        # A daemon that cannot start is not fatal here: the docker tests then fail (CI) or skip.
        bash "$0" start || say "no daemon: the docker tests will say why"
        status=0
        "$@" || status=$?
        bash "$0" stop
        exit "$status"
        ;;
    *)
        echo "usage: $0 start|stop|around CMD..." >&2
        exit 2
        ;;
esac
