#!/usr/bin/env python3
"""lossproof third-party sink: pyiceberg 0.12.0's `Table.upsert(df, join_cols=[key])` behind a
confluent-kafka consumer, the loop many teams hand-roll (README.md beside this file):
consume a batch of Debezium change events, fold it to each key's LAST change,
`table.delete(In(key, deleted keys))` for keys whose last change is a delete,
`table.upsert(rows, join_cols=key)` for the rest, one table per source table, then commit the
Kafka offsets synchronously (the loop and decoding: ../debezium.py).
`lossproof run` sets the LOSSPROOF_* variables."""
import json
import os
import sys

import pyarrow as pa
from pyiceberg.catalog import load_catalog

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import debezium  # noqa: E402  (scenarios/third-party/debezium.py)


def apply(catalog, namespace, events):
    """Each key's LAST change wins: a key deleted and inserted again in the batch is upserted,
    one inserted then deleted is deleted. No key is in both sets, so deleting before
    upserting (two commits) cannot undo either."""
    latest, shapes = debezium.fold(events)
    for name, changes in latest.items():
        table = catalog.create_table_if_not_exists((namespace, name), schema=shapes[name])
        if not table.schema().as_arrow().equals(shapes[name], check_metadata=False):
            with table.update_schema() as update:  # an added column, a widened decimal
                update.union_by_name(shapes[name])
            table = catalog.load_table((namespace, name))
        schema, columns = table.schema().as_arrow(), list(next(iter(changes.values()))[0])
        changes = debezium.fill_from(changes, lambda keys: debezium.rows_by_key(table, keys))
        deleted = [key for key, row in changes.values() if row is None]
        rows = [{f.name: debezium.arrow_value(row.get(f.name), f.type) for f in schema}
                for _, row in changes.values() if row is not None]
        if deleted:
            table.delete(debezium.key_filter(deleted))  # one commit (or none when nothing matched)
        if rows:
            table.upsert(pa.Table.from_pylist(rows, schema=schema), join_cols=columns)  # one commit


def main():
    env = os.environ
    catalog = load_catalog(env["LOSSPROOF_CATALOG_NAME"], **json.loads(env["LOSSPROOF_CATALOG_PROPERTIES"]))
    namespace = env["LOSSPROOF_NAMESPACE"]
    catalog.create_namespace_if_not_exists(namespace)
    debezium.run(lambda events: apply(catalog, namespace, events), lambda n: f"upserted {n} changes")


if __name__ == "__main__":
    main()
