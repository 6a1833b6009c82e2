#!/usr/bin/env python3
"""A CDC-to-Iceberg consumer to copy (docs/bring-your-own.md): Debezium's change topics
(Avro, Confluent registry) -> one Iceberg table per source table, a row per key. It is
- at least once: Kafka offsets are committed only AFTER the batch is in the lake;
- idempotent: each key's newest change in a batch replaces its row (one commit per table);
- in order: a key's changes are applied in offset order (one partition per table);
- TOAST-aware: a value an update left unchanged comes from the version before.
`--commit-first` breaks the first rule on purpose: lossproof's kills then lose rows.
`lossproof run` sets the LOSSPROOF_* variables; needs requirements.txt."""
import io
import json
import os
import signal
import struct
import sys
import urllib.request
from datetime import datetime

import fastavro
import pyarrow as pa
from confluent_kafka import Consumer, TopicPartition
from pyiceberg.catalog import load_catalog
from pyiceberg.expressions import And, EqualTo, In, Or

env = os.environ
COMMIT_FIRST = "--commit-first" in sys.argv
REGISTRY = env["LOSSPROOF_SCHEMA_REGISTRY_URL"]
NAMESPACE = env["LOSSPROOF_NAMESPACE"]
catalog = load_catalog(env["LOSSPROOF_CATALOG_NAME"],
                       **json.loads(env["LOSSPROOF_CATALOG_PROPERTIES"]))
schemas = {}  # registry id -> parsed Avro schema
UNCHANGED = "__debezium_unavailable_value"  # Debezium's unchanged-TOAST placeholder


def decode(data):
    """Confluent wire format: magic byte 0, 4-byte schema id, Avro binary."""
    if data is None:
        return None, None
    _, schema_id = struct.unpack(">bI", data[:5])
    if schema_id not in schemas:
        url = f"{REGISTRY}/schemas/ids/{schema_id}"
        with urllib.request.urlopen(url, timeout=10) as response:
            schemas[schema_id] = fastavro.parse_schema(json.loads(json.load(response)["schema"]))
    return fastavro.schemaless_reader(io.BytesIO(data[5:]), schemas[schema_id]), schemas[schema_id]


def arrow_type(avro):
    """The Arrow type of one Debezium Avro column type."""
    if isinstance(avro, list):  # ["null", T]: nullable
        return arrow_type(next(t for t in avro if t != "null"))
    if isinstance(avro, dict):
        if avro.get("logicalType") == "decimal":
            return pa.decimal128(avro["precision"], avro["scale"])
        if avro.get("connect.name") == "io.debezium.time.ZonedTimestamp":
            return pa.timestamp("us", tz="UTC")
        return arrow_type(avro["type"])
    return {"int": pa.int32(), "long": pa.int64(), "string": pa.string(), "boolean": pa.bool_(),
            "double": pa.float64(), "float": pa.float32(), "bytes": pa.binary()}[avro]


def row_schema(value_schema):
    """The Arrow schema of a change event's `after` row (`before` holds its record type)."""
    before = next(f for f in value_schema["fields"] if f["name"] == "before")
    record = next(t for t in before["type"] if t != "null")
    return pa.schema([(f["name"], arrow_type(f["type"])) for f in record["fields"]])


def arrow_value(value, kind):
    return datetime.fromisoformat(value) if pa.types.is_timestamp(kind) and isinstance(value, str) else value


def fill(row, before):
    """`row` with each unchanged-TOAST placeholder replaced from `before`."""
    return row if row is None or UNCHANGED not in row.values() else {
        c: before[c] if v == UNCHANGED else v for c, v in row.items()}


def table_for(name, schema):
    """The lake table `name`, created or widened to `schema` (as `union_by_name` allows)."""
    table = catalog.create_table_if_not_exists((NAMESPACE, name), schema=schema)
    if not table.schema().as_arrow().equals(schema, check_metadata=False):
        with table.update_schema() as update:
            update.union_by_name(schema)
        table = catalog.load_table((NAMESPACE, name))
    return table


def apply(messages):
    """Each key's newest change in the batch replaces the key's row."""
    latest, shapes = {}, {}  # table -> {key tuple: (key, row or None)}, its newest Arrow schema
    for message in messages:
        key, _ = decode(message.key())
        value, value_schema = decode(message.value())
        if key is None or value is None:  # a tombstone: the delete came just before
            continue
        table = message.topic().rsplit(".", 1)[1]
        shapes[table] = row_schema(value_schema)
        row = None if value["op"] == "d" else value["after"]
        changes, k = latest.setdefault(table, {}), tuple(sorted(key.items()))
        changes[k] = (key, fill(row, changes[k][1]) if k in changes else row)
    for name, changes in latest.items():
        table = table_for(name, shapes[name])
        schema = table.schema().as_arrow()
        keys = [key for key, _ in changes.values()]
        columns = list(keys[0])
        if len(columns) == 1:
            where = In(columns[0], [k[columns[0]] for k in keys])
        else:
            matches = [And(*(EqualTo(c, k[c]) for c in columns)) for k in keys]
            where = matches[0] if len(matches) == 1 else Or(*matches)
        if any(UNCHANGED in row.values() for _, row in changes.values() if row):
            stored = {tuple(sorted((c, r[c]) for c in columns)): r  # the lake's version
                      for r in table.scan(row_filter=where).to_arrow().to_pylist()}
            changes = {k: (key, fill(row, stored.get(k))) for k, (key, row) in changes.items()}
        rows = [{f.name: arrow_value(row.get(f.name), f.type) for f in schema}
                for _, row in changes.values() if row is not None]
        with table.transaction() as tx:
            tx.delete(where)
            if rows:
                tx.append(pa.Table.from_pylist(rows, schema=schema))


def main():
    config = {"bootstrap.servers": env["LOSSPROOF_BOOTSTRAP_SERVERS"], "group.id": env["LOSSPROOF_GROUP"],
              "enable.auto.commit": False, "auto.offset.reset": "earliest"}
    config.update(json.loads(env.get("LOSSPROOF_KAFKA_PROPERTIES", "{}")))
    consumer = Consumer(config)
    # assign, not subscribe: a restart resumes at once, not after the killed member's session.
    topics = env["LOSSPROOF_TOPICS"].split(",")
    consumer.assign([TopicPartition(topic, partition) for topic in topics
                     for partition in consumer.list_topics(topic, timeout=10).topics[topic].partitions])
    catalog.create_namespace_if_not_exists(NAMESPACE)
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    while not stopping:
        messages = [m for m in consumer.consume(num_messages=500, timeout=1.0) if not m.error()]
        if not messages:
            continue
        if COMMIT_FIRST:
            consumer.commit(asynchronous=False)
        apply(messages)
        if not COMMIT_FIRST:
            consumer.commit(asynchronous=False)
        print(f"applied {len(messages)} changes", flush=True)
    consumer.close()


if __name__ == "__main__":
    main()
