"""What every third-party sink adapter here shares: reading Debezium's change topics (Avro,
Confluent registry) as the template consumer does (scenarios/bring-your-own/consumer.py), and
folding a batch to each key's last change. An adapter adds only how its sink writes.
Import it from a sink's folder with the folder above on `sys.path` (each sink.py does)."""
import io
import json
import os
import signal
import struct
import urllib.request
from datetime import datetime

import fastavro
import pyarrow as pa
from confluent_kafka import Consumer, TopicPartition
from pyiceberg.expressions import And, EqualTo, In, Or

UNCHANGED = "__debezium_unavailable_value"  # Debezium's unchanged-TOAST placeholder
_schemas = {}  # registry id -> parsed Avro schema


def decode(data, registry):
    """Confluent wire format: magic byte 0, 4-byte schema id, Avro binary."""
    if data is None:
        return None, None
    _, schema_id = struct.unpack(">bI", data[:5])
    if schema_id not in _schemas:
        with urllib.request.urlopen(f"{registry}/schemas/ids/{schema_id}", timeout=10) as response:
            _schemas[schema_id] = fastavro.parse_schema(json.loads(json.load(response)["schema"]))
    return fastavro.schemaless_reader(io.BytesIO(data[5:]), _schemas[schema_id]), _schemas[schema_id]


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
    """The Arrow schema of a change event's row (`before` holds its record type)."""
    before = next(f for f in value_schema["fields"] if f["name"] == "before")
    record = next(t for t in before["type"] if t != "null")
    return pa.schema([(f["name"], arrow_type(f["type"])) for f in record["fields"]])


def arrow_value(value, kind):
    return datetime.fromisoformat(value) if pa.types.is_timestamp(kind) and isinstance(value, str) else value


def fill(row, before):
    """`row` with each unchanged-TOAST placeholder replaced from `before`."""
    return row if row is None or UNCHANGED not in row.values() else {
        c: before[c] if v == UNCHANGED else v for c, v in row.items()}


def key_filter(keys):
    """A pyiceberg filter matching exactly `keys` (dicts of key column -> value)."""
    columns = list(keys[0])
    if len(columns) == 1:
        return In(columns[0], [k[columns[0]] for k in keys])
    matches = [And(*(EqualTo(c, k[c]) for c in columns)) for k in keys]
    return matches[0] if len(matches) == 1 else Or(*matches)


def fold(events):
    """`events`: decoded (table, key, value, value schema) in offset order, tombstones left out.
    Returns each table's last change per key, {table: {key tuple: (key, row or None)}} (None: the
    key's last change deletes it; an unchanged TOAST value filled from the batch's earlier
    version), and each table's newest row schema as Arrow."""
    latest, shapes = {}, {}
    for name, key, value, value_schema in events:
        shapes[name] = row_schema(value_schema)
        row = None if value["op"] == "d" else value["after"]
        changes, k = latest.setdefault(name, {}), tuple(sorted(key.items()))
        changes[k] = (key, fill(row, changes[k][1]) if k in changes else row)
    return latest, shapes


def fill_from(changes, stored):
    """`changes` with the unchanged TOAST values still in them filled from `stored(keys)`, the
    lake's rows of those keys keyed as `fold` keys them; `stored` is called only when needed."""
    if not any(UNCHANGED in row.values() for _, row in changes.values() if row):
        return changes
    lake = stored([key for key, _ in changes.values()])
    return {k: (key, fill(row, lake.get(k))) for k, (key, row) in changes.items()}


def rows_by_key(table, keys):
    """A pyiceberg table's rows of `keys`, keyed as `fold` keys them."""
    columns = list(keys[0])
    return {tuple(sorted((c, r[c]) for c in columns)): r
            for r in table.scan(row_filter=key_filter(keys)).to_arrow().to_pylist()}


def run(apply, say):
    """The adapter loop every sink here uses: consume up to 500 change events, `apply` them
    (decoded, in offset order, tombstones left out), THEN commit the Kafka offsets
    synchronously; until SIGTERM. `say(n)` is the log line after each batch."""
    env = os.environ
    registry = env["LOSSPROOF_SCHEMA_REGISTRY_URL"]
    config = {"bootstrap.servers": env["LOSSPROOF_BOOTSTRAP_SERVERS"], "group.id": env["LOSSPROOF_GROUP"],
              "enable.auto.commit": False, "auto.offset.reset": "earliest"}
    config.update(json.loads(env.get("LOSSPROOF_KAFKA_PROPERTIES", "{}")))
    consumer = Consumer(config)
    # assign, not subscribe: a restart resumes at once, not after the killed member's session.
    topics = env["LOSSPROOF_TOPICS"].split(",")
    consumer.assign([TopicPartition(topic, partition) for topic in topics
                     for partition in consumer.list_topics(topic, timeout=10).topics[topic].partitions])
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    while not stopping:
        messages = [m for m in consumer.consume(num_messages=500, timeout=1.0) if not m.error()]
        if not messages:
            continue
        events = []
        for message in messages:
            key, _ = decode(message.key(), registry)
            value, value_schema = decode(message.value(), registry)
            if key is not None and value is not None:  # a tombstone follows its delete: skip it
                events.append((message.topic().rsplit(".", 1)[1], key, value, value_schema))
        apply(events)
        consumer.commit(asynchronous=False)  # only AFTER the batch is in the lake
        print(say(len(messages)), flush=True)
    consumer.close()
