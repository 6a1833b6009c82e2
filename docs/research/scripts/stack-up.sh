#!/bin/bash
# Bring up source PG, broker PG, nisshi (postgres storage), Kafka Connect (distributed) on loopback.
# usage: stack-up.sh STATE_DIR [extra-classpath-dir]
set -euo pipefail
S=${1:?state dir}; EXTRA=${2:-}
C=$HOME/.cache/lossproof
PGBIN=/usr/lib/postgresql/15/bin
NISSHI=$C/tools/nisshi-0.8.1/bin/nisshi
JARS=$C/jars/debezium-3.1.1
ts() { date +%s.%N; }
el() { echo "$(echo "$(ts) - $1" | bc | xargs printf '%.2f')s"; }

mkdir -p "$S"; chown postgres:postgres "$S"
python3 - > "$S/ports.env" <<'EOF'
import socket
ss=[]
for n in ["BROKER_PG_PORT","SOURCE_PG_PORT","BROKER_PORT","CONNECT_PORT","REGISTRY_PORT"]:
    s=socket.socket(); s.bind(("127.0.0.1",0)); ss.append(s); print(f"{n}={s.getsockname()[1]}")
EOF
. "$S/ports.env"; cat "$S/ports.env"

# --- two PostgreSQL clusters (postgres user; refuses root) ---
for c in sourcepg brokerpg; do
  t0=$(ts)
  install -d -o postgres -g postgres "$S/$c"
  runuser -u postgres -- $PGBIN/initdb -D "$S/$c/data" -A trust -U postgres -E UTF8 --no-sync >"$S/$c/initdb.log"
  port=$([ $c = sourcepg ] && echo $SOURCE_PG_PORT || echo $BROKER_PG_PORT)
  {
    echo "listen_addresses = '127.0.0.1'"; echo "port = $port"; echo "unix_socket_directories = '$S/$c'"
    if [ $c = sourcepg ]; then echo "wal_level = logical"; echo "max_replication_slots = 20"; echo "max_wal_senders = 20"; fi
  } >> "$S/$c/data/postgresql.conf"
  runuser -u postgres -- setsid $PGBIN/pg_ctl -D "$S/$c/data" -l "$S/$c/server.log" -w start >/dev/null
  echo "$c initdb+start $(el $t0)"
done
psql -h 127.0.0.1 -p $BROKER_PG_PORT -U postgres -qc 'create database nisshi'
psql -h 127.0.0.1 -p $SOURCE_PG_PORT -U postgres -qc 'create database app'

# --- broker ---
t0=$(ts)
mkdir -p "$S/broker"
setsid "$NISSHI" broker \
  --listener-url tcp://127.0.0.1:$BROKER_PORT \
  --advertised-listener-url tcp://127.0.0.1:$BROKER_PORT \
  --storage-engine postgres://postgres@127.0.0.1:$BROKER_PG_PORT/nisshi \
  --group-initial-rebalance-delay 0s \
  > "$S/broker/broker.log" 2>&1 &
echo $! > "$S/broker/pid"
until (exec 3<>/dev/tcp/127.0.0.1/$BROKER_PORT) 2>/dev/null; do sleep 0.05; done
echo "broker listening $(el $t0)"

# --- optional mock registry (smoke test only) ---
mkdir -p "$S/registry"
setsid python3 $HOME/.cache/lossproof/scripts/mockreg.py $REGISTRY_PORT > "$S/registry/log" 2>&1 &
echo $! > "$S/registry/pid"

# --- Kafka Connect, distributed ---
mkdir -p "$S/connect"
cat > "$S/connect/worker.properties" <<EOF
bootstrap.servers=127.0.0.1:$BROKER_PORT
group.id=lossproof-connect
config.storage.topic=lossproof-connect-configs
offset.storage.topic=lossproof-connect-offsets
status.storage.topic=lossproof-connect-status
config.storage.replication.factor=1
offset.storage.replication.factor=1
status.storage.replication.factor=1
offset.storage.partitions=1
status.storage.partitions=1
key.converter=org.apache.kafka.connect.json.JsonConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
key.converter.schemas.enable=false
value.converter.schemas.enable=false
listeners=http://127.0.0.1:$CONNECT_PORT
rest.advertised.host.name=127.0.0.1
rest.advertised.port=$CONNECT_PORT
plugin.discovery=service_load
topic.creation.enable=true
offset.flush.interval.ms=1000
EOF
cp $HOME/.cache/lossproof/scripts/log4j2.properties "$S/connect/"
CP="$JARS/*"; [ -n "$EXTRA" ] && CP="$CP:$EXTRA/*"
t0=$(ts)
setsid java -Xmx1g -Dlog4j2.configurationFile="$S/connect/log4j2.properties" -cp "$CP" \
  org.apache.kafka.connect.cli.ConnectDistributed "$S/connect/worker.properties" > "$S/connect/connect.log" 2>&1 &
echo $! > "$S/connect/pid"
until [ "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$CONNECT_PORT/connectors)" = 200 ]; do sleep 0.1; done
echo "connect GET /connectors=200 $(el $t0)"
until [ "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$CONNECT_PORT/health)" = 200 ]; do sleep 0.1; done
echo "connect GET /health=200 $(el $t0)"
