#!/usr/bin/env python3
"""lossproof third-party sink: dlt 1.31.0, Iceberg table format on the `filesystem` destination,
`write_disposition="merge"` with `primary_key` (dlt resolves it to its `upsert` strategy on
Iceberg), the Iceberg tables registered in lossproof's catalog (README.md beside this file).
A small adapter loop feeds it from Debezium's change topics: consume a batch, fold it to each
key's LAST change (dlt's upsert requires unique keys in a load), `pipeline.run(...)` one
resource per source table, then commit the Kafka offsets. A delete is a row with the
`hard_delete` column `_lp_deleted` set, as dlt's merge documentation says. The loop and decoding: ../debezium.py.
`--ignore-pending` drops the one step dlt's docs ask for after a crash (a `run()` with data
when a package is pending loads only that package and ignores the data)."""
import json
import os
import sys

os.environ.setdefault("RUNTIME__DLTHUB_TELEMETRY", "false")  # dlt's telemetry: no such network here
import dlt  # noqa: E402
import pyarrow as pa  # noqa: E402
from dlt.common.libs.pyiceberg import get_iceberg_tables  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import debezium  # noqa: E402  (scenarios/third-party/debezium.py)

DELETED = "_lp_deleted"  # the `hard_delete` column


def stored(pipeline, name, keys):
    """The lake's rows of `keys` (to fill unchanged TOAST values), through dlt's own helper."""
    if not pipeline.default_schema_name or name not in pipeline.default_schema.tables:
        return {}
    return debezium.rows_by_key(get_iceberg_tables(pipeline, name)[name], keys)


def pipeline_for(catalog_name, properties, namespace, pipelines_dir):
    """dlt's `filesystem` destination on the catalog's warehouse, its Iceberg tables registered
    in the catalog given (dlt's `iceberg_catalog` config section, from the environment)."""
    os.environ["ICEBERG_CATALOG__ICEBERG_CATALOG_NAME"] = catalog_name
    os.environ["ICEBERG_CATALOG__ICEBERG_CATALOG_TYPE"] = properties["type"]
    os.environ["ICEBERG_CATALOG__ICEBERG_CATALOG_CONFIG"] = json.dumps(properties)
    return dlt.pipeline(pipeline_name="lossproof", pipelines_dir=pipelines_dir, dataset_name=namespace,
                        destination=dlt.destinations.filesystem(bucket_url=properties["warehouse"]))


def apply(pipeline, events, ignore_pending=False):
    """Each key's last change in the batch is the one loaded: a row, or its key with `_lp_deleted`."""
    if pipeline.has_pending_data and not ignore_pending:
        pipeline.run()  # a package a kill left behind: `run` loads it and exits (dlt's docs)
    latest, shapes = debezium.fold(events)
    resources = []
    for name, changes in latest.items():
        changes = debezium.fill_from(changes, lambda keys, name=name: stored(pipeline, name, keys))
        schema = shapes[name].append(pa.field(DELETED, pa.bool_()))
        rows = [{f.name: debezium.arrow_value((row or key).get(f.name), f.type) for f in shapes[name]}
                | {DELETED: row is None} for key, row in changes.values()]
        resources.append(dlt.resource(
            pa.Table.from_pylist(rows, schema=schema), name=name, table_format="iceberg",
            write_disposition="merge", primary_key=list(next(iter(changes.values()))[0]),
            columns={DELETED: {"hard_delete": True}}))
    if resources:
        return pipeline.run(resources)


def main():
    env = os.environ
    ignore_pending = "--ignore-pending" in sys.argv
    pipeline = pipeline_for(env["LOSSPROOF_CATALOG_NAME"], json.loads(env["LOSSPROOF_CATALOG_PROPERTIES"]),
                            env["LOSSPROOF_NAMESPACE"], os.path.join(env["LOSSPROOF_STATE_DIR"], "dlt"))
    debezium.run(lambda events: apply(pipeline, events, ignore_pending), lambda n: f"loaded {n} changes")


if __name__ == "__main__":
    main()
