#!/usr/bin/env bash
# Start whichever of the local PostgreSQL, Redis and NATS (JetStream) is down; fail if one stays down.
set -uo pipefail
up() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_up() { for _ in $(seq 1 40); do up "$1" && return 0; sleep 0.5; done; return 1; }

if ! up 5432; then
  echo "starting PostgreSQL"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
fi
if ! up 6379; then
  echo "starting Redis"
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log || redis-server --daemonize yes --port 6379 --save ""
fi
if ! up 4222; then
  echo "starting NATS with JetStream"
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- \
    -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log
fi
status=0
for p in 5432:PostgreSQL 6379:Redis 4222:NATS; do
  if wait_up "${p%%:*}"; then echo "${p##*:} is up"; else echo "${p##*:} did not start" >&2; status=1; fi
done
exit $status
