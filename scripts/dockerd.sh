#!/usr/bin/env bash
# Start or stop a Docker daemon for the docker sandbox (docs/sandbox.md), as root:
#   scripts/dockerd.sh start   starts dockerd when no daemon answers, and records its pid (and
#                              start time) in DOCKERD_STATE
#   scripts/dockerd.sh stop    stops the daemon that `start` with the same DOCKERD_STATE started,
#                              and only it: the recorded pid must still be that dockerd
#   scripts/dockerd.sh around CMD...   start, run CMD, stop; exits with CMD's status (`make test`
#                              with the docker extra: every docker test module finds the daemon up,
#                              so none starts or stops one while another runs)
#
# One daemon, one owner: a daemon is stopped only by whoever started it. `around` remembers in
# its own shell whether it started one, and which (pid and start time); it reads no pid file. So
# when two checkouts run `make test` side by side, the second finds the first's daemon answering,
# uses it, starts nothing and stops nothing (a shared pid file once made the second's stop kill
# the first's daemon mid-run). The other way round is not covered: the first's daemon goes when
# the first's command ends, whoever else is using it then.
#
# The options are those measured on the project's machines: the overlay2 storage driver (vfs
# where overlay2 cannot start), no iptables rules and no bridge (sandbox containers run with
# --network none).
# DOCKERD_STATE (default /tmp/heavygym-dockerd-<checkout>, one per checkout) holds `start`'s pid
# file and the daemons' logs.
# DOCKERD_ROOT (optional): a daemon apart from the machine's, with its data root, exec root and
# pid file under this directory, listening on DOCKER_HOST (unix://PATH), which the docker CLI, and
# so the tests, then use too; without it, the machine's usual daemon (/var/lib/docker, whose
# images the tests reuse, on /var/run/docker.sock).
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
STATE="${DOCKERD_STATE:-/tmp/heavygym-dockerd-$(printf '%s' "$here" | sha256sum | cut -c1-12)}"
PIDFILE="$STATE/dockerd.pid"
say() { printf '\033[1m[dockerd]\033[0m %s\n' "$*"; }
answers() { docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }
started_at() { awk '{print $22}' "/proc/$1/stat" 2>/dev/null || true; }  # clock ticks since boot: a reused pid differs

STARTED=""  # "PID START" of the daemon this invocation started, if it started one

# Start dockerd unless a daemon answers; sets STARTED when it started one. Log: $1.
start_daemon() {
    local log="$1" pid driver
    if answers; then
        say "a daemon already answers (${DOCKER_HOST:-unix:///var/run/docker.sock}): nothing started, nothing to stop"
        return 0
    fi
    command -v dockerd >/dev/null || { say "no dockerd: HEAVYGYM_EXTRAS=docker scripts/setup.sh installs docker.io"; return 1; }
    [[ $(id -u) -eq 0 ]] || { say "dockerd needs root: run this as root, or point DOCKER_HOST at a running daemon"; return 1; }
    local own=()
    if [[ -n "${DOCKERD_ROOT:-}" ]]; then
        [[ "${DOCKER_HOST:-}" == unix://* ]] || { say "DOCKERD_ROOT needs DOCKER_HOST=unix://PATH (where its daemon listens)"; return 1; }
        mkdir -p "$DOCKERD_ROOT"
        own=(--data-root "$DOCKERD_ROOT/data" --exec-root "$DOCKERD_ROOT/exec" --pidfile "$DOCKERD_ROOT/docker.pid" -H "$DOCKER_HOST")
    fi
    mkdir -p "$(dirname "$log")"
    # overlay2 where the data root's filesystem takes it (a container starts in milliseconds),
    # else vfs, which works on any filesystem but copies the whole image for every container.
    for driver in overlay2 vfs; do
        dockerd "${own[@]}" --storage-driver="$driver" --iptables=false --bridge=none >"$log" 2>&1 &
        pid=$!
        STARTED="$pid $(started_at "$pid")"
        for _ in $(seq 1 60); do
            if answers; then say "dockerd started (pid $pid, storage $driver, log $log)"; return 0; fi
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.5
        done
        if kill -0 "$pid" 2>/dev/null; then break; fi  # running but not answering: not the driver
        STARTED=""
        say "dockerd did not start with the $driver storage driver; its log ends with:"
        tail -n 5 "$log" >&2 || true
    done
    say "dockerd did not answer within 30 s; its log ($log) ends with:"
    tail -n 20 "$log" >&2 || true
    stop_daemon
    return 1
}

# Stop the daemon named by STARTED ("PID START"), if that pid is still the process started then.
stop_daemon() {
    local pid start
    read -r pid start <<<"$STARTED" || true
    STARTED=""
    [[ -n "${pid:-}" ]] || return 0
    if [[ -z "$start" || "$(started_at "$pid")" != "$start" ]]; then
        say "dockerd (pid $pid) is no longer running: nothing stopped"
        return 0
    fi
    kill "$pid"
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
    say "dockerd (pid $pid) stopped"
}

case "${1:-}" in
    start)
        start_daemon "$STATE/dockerd.log" || exit 1
        if [[ -n "$STARTED" ]]; then
            mkdir -p "$STATE"
            echo "$STARTED" >"$PIDFILE"
        fi
        ;;
    stop)
        if [[ ! -f "$PIDFILE" ]]; then
            say "no daemon started by this script with DOCKERD_STATE=$STATE ($PIDFILE missing): nothing stopped"
            exit 0
        fi
        STARTED="$(cat "$PIDFILE")"
        stop_daemon
        rm -f "$PIDFILE"
        ;;
    around)
        shift
        [[ $# -gt 0 ]] || { echo "usage: $0 around CMD..." >&2; exit 2; }
        # Stopped however this shell ends (CMD's end, Ctrl-C, SIGTERM): only what it started itself.
        trap 'stop_daemon' EXIT
        trap 'exit 130' INT
        trap 'exit 143' TERM
        # A daemon that cannot start is not fatal here: the docker tests then fail (CI) or skip.
        start_daemon "$STATE/dockerd-around-$$.log" || say "no daemon: the docker tests will say why"
        status=0
        "$@" || status=$?
        exit "$status"
        ;;
    *)
        echo "usage: $0 start|stop|around CMD..." >&2
        exit 2
        ;;
esac
