#!/bin/sh
# Container entrypoint: wait until Postgres and Redis answer, migrate when asked
# (CONTINUUM_MIGRATE=1, run by exactly one service), then run the requested role.
#   worker [QUEUES]  celery worker on QUEUES (default: all), CONTINUUM_CONCURRENCY processes
#   beat             celery beat (run exactly one)
#   flower           flower with basic auth (CONTINUUM_FLOWER_PASSWORD required)
#   api              the HTTP API and Mission Control on port 8000 (every interface of the container)
#   mcp              the MCP server over streamable HTTP on port 8765 (the API's bearer tokens)
#   migrate          apply migrations and exit
#   check            readiness check and exit
set -eu

role="${1:-worker}"
[ $# -gt 0 ] && shift
tries="${CONTINUUM_WAIT_TRIES:-60}"

wait_ready() {
  n=0
  until continuum check >/dev/null 2>&1; do
    n=$((n + 1))
    if [ "$n" -ge "$tries" ]; then
      echo "continuum-entrypoint: servers not ready after $tries tries:" >&2
      continuum check >&2 || true
      exit 69
    fi
    sleep 1
  done
}

case "$role" in
  worker|beat|flower|api|mcp|migrate|check) ;;
  *)
    echo "continuum-entrypoint: unknown role '$role' (use worker, beat, flower, api, mcp, migrate or check)" >&2
    exit 64
    ;;
esac

wait_ready
if [ "${CONTINUUM_MIGRATE:-0}" = "1" ] || [ "$role" = "migrate" ]; then
  continuum db upgrade
fi

case "$role" in
  worker)
    queues="${1:-events,extract,embed,maintenance,narrative}"
    if [ -n "${CONTINUUM_CONCURRENCY:-}" ]; then
      exec continuum worker -Q "$queues" -c "$CONTINUUM_CONCURRENCY"
    fi
    exec continuum worker -Q "$queues"
    ;;
  beat) exec continuum beat ;;
  flower) exec continuum flower ;;
  # Inside its container a server must listen on every interface to be reachable at all;
  # compose publishes both on the host's loopback only.
  api) exec continuum api --host 0.0.0.0 --port 8000 ;;
  mcp) exec continuum mcp --http --host 0.0.0.0 --port 8765 ;;
  migrate|check) continuum check ;;
esac
