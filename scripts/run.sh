#!/usr/bin/env bash
# Started by `make run`. Migrates, loads the demo data, then runs the Celery workers (one
# process per core, at most 4) and the Django development server side by side until Ctrl-C
# (SIGINT) or SIGTERM stops them all.
#
# With no DATABASE_URL / CELERY_BROKER_URL / REDIS_URL set, settings use SQLite under var/
# and kombu's filesystem broker under var/broker: nothing else has to be installed.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-.venv/bin/python}
PORT=${PORT:-8000}
ADDRESS=127.0.0.1
URL="http://${ADDRESS}:${PORT}/"
export DEBUG=${DEBUG:-1}
# A model on this machine (Ollama at 127.0.0.1:11434) is a private address: allow those for
# local development (production leaves it off; see config/settings.py).
export MODEL_ALLOW_PRIVATE_NETWORKS=${MODEL_ALLOW_PRIVATE_NETWORKS:-1}
VAR_DIR=${TASKWRIGHT_VAR_DIR:-var}
LOG_DIR="${VAR_DIR}/log"
WORKER_LOG="${LOG_DIR}/worker.log"
WORKER_QUEUES=default,drafting,rollouts,grading,packs
# One worker process per core (at most 4), each with a few threads: a process runs its
# threads' Python one at a time, so a second core only helps through a second process.
WORKER_PROCESSES=${WORKER_PROCESSES:-$("$PYTHON" -c 'import os; print(max(1, min(4, len(os.sched_getaffinity(0)))))')}
if ! [[ $WORKER_PROCESSES =~ ^[1-9][0-9]*$ ]]; then
    echo "WORKER_PROCESSES must be a whole number of worker processes, 1 or more (it is '${WORKER_PROCESSES}')." >&2
    exit 1
fi
STOP_GRACE_SECONDS=15

mask() {  # hide the password part of a URL
    sed -E 's#(//[^:/@]*):[^@]*@#\1:***@#' <<<"$1"
}

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }

say "Database: $(if [[ -n ${DATABASE_URL:-} ]]; then mask "$DATABASE_URL"; else echo "SQLite at ${VAR_DIR}/db.sqlite3"; fi)"
broker=${CELERY_BROKER_URL:-${REDIS_URL:-}}
say "Broker:   $(if [[ -n $broker ]]; then mask "$broker"; else echo "embedded filesystem broker at ${VAR_DIR}/broker"; fi)"

if ! "$PYTHON" -c 'import socket, sys
with socket.socket() as s:
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as runserver does
    s.bind((sys.argv[1], int(sys.argv[2])))' "$ADDRESS" "$PORT" 2>/dev/null; then
    echo "Port ${PORT} on ${ADDRESS} is already in use: stop what uses it, or choose another (PORT=8001 make run)." >&2
    exit 1
fi

say "Applying migrations"
"$PYTHON" manage.py migrate --no-input

say "Loading demo data"
seed_output=$("$PYTHON" manage.py seed_demo)
printf '%s\n' "$seed_output"

worker_pids=""
server_pid=""

stop_all() {
    trap - INT TERM EXIT
    local pids=()
    for pid in $server_pid $worker_pids; do
        if kill -0 "$pid" 2>/dev/null; then
            pids+=("$pid")
        fi
    done
    if ((${#pids[@]})); then
        say "Stopping the web server and the workers"
        kill -TERM "${pids[@]}" 2>/dev/null || true
        # The worker's warm shutdown lets a running job finish; past the grace period it
        # is killed, and the broker hands its unacknowledged job to the next worker.
        for _ in $(seq $((STOP_GRACE_SECONDS * 4))); do
            local alive=0
            for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
            ((alive)) || break
            sleep 0.25
        done
        # (the workers themselves, too, if their supervisors are killed before them)
        for pid in $worker_pids; do pkill -KILL -P "$pid" 2>/dev/null || true; done
        kill -KILL "${pids[@]}" 2>/dev/null || true
    fi
    wait 2>/dev/null || true
}
trap 'stop_all; exit 130' INT
trap 'stop_all; exit 143' TERM
trap 'stop_all' EXIT

mkdir -p "$LOG_DIR"
: >"$WORKER_LOG"
# Each worker runs under a small supervisor: a worker that dies (killed, out of memory, an
# unrecoverable error) is started again at once, and its unfinished jobs resume (their
# messages come back, and the claims make them safe to run again). One that keeps dying
# within seconds of its start is given up on after a few tries. Argument: the worker's number.
supervise_worker() {
    local child="" started status quick=0 name="worker$1@%h"
    trap '[[ -n $child ]] && kill -TERM "$child" 2>/dev/null; [[ -n $child ]] && wait "$child"; exit 0' TERM INT
    while true; do
        started=$SECONDS
        "$PYTHON" -m celery -A config worker -n "$name" -Q "$WORKER_QUEUES" --pool threads -c 4 -l info >>"$WORKER_LOG" 2>&1 &
        child=$!
        set +e
        wait "$child"
        status=$?
        set -e
        if ((SECONDS - started < 10)); then quick=$((quick + 1)); else quick=0; fi
        if ((quick >= 5)); then
            echo "Celery worker $1 exited (status ${status}) within seconds of its start, 5 times in a row: giving up." >>"$WORKER_LOG"
            exit "$status"
        fi
        sleep 1  # (when make run is stopping, its TERM arrives meanwhile and the trap above ends this loop)
        echo "Celery worker $1 exited (status ${status}); starting it again." >>"$WORKER_LOG"
    done
}

say "Starting ${WORKER_PROCESSES} Celery worker process(es) (queues ${WORKER_QUEUES}; log: ${WORKER_LOG}; restarted if one dies)"
for number in $(seq "$WORKER_PROCESSES"); do
    supervise_worker "$number" &
    worker_pids="$worker_pids $!"
done

say "Starting the web server on ${URL}"
DB_CONN_MAX_AGE=0 "$PYTHON" manage.py runserver "${ADDRESS}:${PORT}" &  # a thread per request: keep no connection
server_pid=$!

# Wait until all answer: each worker logs "ready." once it consumes from the broker;
# the server answers any HTTP request (a redirect to the login page is fine).
up=0
for _ in $(seq 240); do
    for pid in $worker_pids; do
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "A Celery worker stopped while starting; the workers' log (${WORKER_LOG}):" >&2
            tail -n 40 "$WORKER_LOG" >&2
            exit 1
        fi
    done
    if ! kill -0 "$server_pid" 2>/dev/null; then
        echo "The web server stopped while starting (is port ${PORT} in use? try PORT=8001 make run)." >&2
        exit 1
    fi
    if (($(grep -c " ready\.$" "$WORKER_LOG") >= WORKER_PROCESSES)) &&
        "$PYTHON" -c 'import sys, urllib.request, urllib.error
try:
    urllib.request.urlopen(sys.argv[1], timeout=2)
except urllib.error.HTTPError:
    pass' "$URL" 2>/dev/null; then
        up=1
        break
    fi
    sleep 0.25
done
if ((!up)); then
    echo "The web server or a worker did not come up within a minute; see the output above and ${WORKER_LOG}." >&2
    exit 1
fi

logins=$(grep -E "username:" <<<"$seed_output" || true)
cat <<EOF

────────────────────────────────────────────────────────────────────────
  Taskwright is running:  ${URL}

  Demo logins (also in ${VAR_DIR}/demo_logins.json):
${logins}

  Workers' log: ${WORKER_LOG}      Stop all: Ctrl-C
────────────────────────────────────────────────────────────────────────

EOF

# Run until either process exits or a signal arrives (the traps stop both).
set +e
# shellcheck disable=SC2086  # (the workers' pids, one word each)
wait -n "$server_pid" $worker_pids
status=$?
set -e
if ! kill -0 "$server_pid" 2>/dev/null; then
    echo "The web server exited (status ${status}); stopping the workers." >&2
else
    echo "A Celery worker gave up (status ${status}); stopping the web server and the others. Their log: ${WORKER_LOG}" >&2
    tail -n 20 "$WORKER_LOG" >&2
fi
exit "$status"
