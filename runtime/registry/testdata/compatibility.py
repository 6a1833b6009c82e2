"""Generates compatibility.json: schema-evolution cases with Confluent's verdicts.

    python3 compatibility.py > compatibility.json

Every "expected" value must be what Confluent itself answers: check with
Oracle.java (see README.md) after any change. The Rust unit test
compatibility::tests::agrees_with_confluent_on_every_recorded_case then holds
the registry to the same verdicts.
"""
import json, copy

def rec(name, fields, **kw):
    d = {"type": "record", "name": name, "fields": fields}
    d.update(kw)
    return d

def f(name, t, **kw):
    d = {"name": name, "type": t}
    d.update(kw)
    return d

ID = f("id", "int")
cases = []
def case(name, level, new, old, expected, note=""):
    cases.append({"name": name, "level": level, "new": new, "old": old, "expected": expected, **({"note": note} if note else {})})

v1 = rec("Customer", [ID])
with_default = rec("Customer", [ID, f("name", "string", default="")])
without_default = rec("Customer", [ID, f("name", "string")])
case("backward: add a field with a default", "BACKWARD", with_default, [v1], "compatible")
case("backward: add a field without a default", "BACKWARD", without_default, [v1], "incompatible")
case("backward: remove a field", "BACKWARD", v1, [without_default], "compatible")
case("backward: string -> int", "BACKWARD", rec("Customer", [ID, f("name", "int")]), [without_default], "incompatible")
case("backward: int -> long (widening)", "BACKWARD", rec("Customer", [f("id", "long")]), [v1], "compatible")
case("backward: long -> int (narrowing)", "BACKWARD", v1, [rec("Customer", [f("id", "long")])], "incompatible")
case("backward: string -> bytes", "BACKWARD", rec("Customer", [ID, f("name", "bytes")]), [without_default], "compatible")
case("backward: record renamed", "BACKWARD", rec("Client", [ID]), [v1], "incompatible")
case("backward: field renamed with an alias", "BACKWARD", rec("Customer", [f("key", "int", aliases=["id"])]), [v1], "compatible")
case("backward: field renamed without an alias", "BACKWARD", rec("Customer", [f("key", "int")]), [v1], "incompatible")
case("backward: string -> optional string", "BACKWARD", rec("Customer", [ID, f("name", ["null", "string"], default=None)]), [without_default], "compatible")
case("backward: optional string -> string", "BACKWARD", without_default, [rec("Customer", [ID, f("name", ["null", "string"], default=None)])], "incompatible",
     "a writer union branch (null) the reader cannot read: apache-avro calls this Partial")
enum_ab = {"type": "enum", "name": "Status", "symbols": ["A", "B"]}
enum_abc = {"type": "enum", "name": "Status", "symbols": ["A", "B", "C"]}
case("backward: enum symbol added", "BACKWARD", rec("Customer", [ID, f("s", enum_abc)]), [rec("Customer", [ID, f("s", enum_ab)])], "compatible")
case("backward: enum symbol removed", "BACKWARD", rec("Customer", [ID, f("s", enum_ab)]), [rec("Customer", [ID, f("s", enum_abc)])], "incompatible")
case("backward: enum symbol removed, reader has an enum default", "BACKWARD", rec("Customer", [ID, f("s", dict(enum_ab, default="A"))]), [rec("Customer", [ID, f("s", enum_abc)])], "compatible")
case("backward: fixed size changed", "BACKWARD", rec("Customer", [ID, f("h", {"type": "fixed", "name": "Hash", "size": 16})]), [rec("Customer", [ID, f("h", {"type": "fixed", "name": "Hash", "size": 8})])], "incompatible")
case("backward: map values int -> long", "BACKWARD", rec("Customer", [ID, f("m", {"type": "map", "values": "long"})]), [rec("Customer", [ID, f("m", {"type": "map", "values": "int"})])], "compatible")
case("backward: array items long -> int", "BACKWARD", rec("Customer", [ID, f("a", {"type": "array", "items": "int"})]), [rec("Customer", [ID, f("a", {"type": "array", "items": "long"})])], "incompatible")

def dec(p, s):
    return {"type": "bytes", "scale": s, "precision": p, "connect.version": 1,
            "connect.parameters": {"scale": str(s), "connect.decimal.precision": str(p)},
            "connect.name": "org.apache.kafka.connect.data.Decimal", "logicalType": "decimal"}
case("backward: decimal(10,2) -> decimal(12,2) (logical types are not compared)", "BACKWARD", rec("Customer", [ID, f("b", dec(12, 2))]), [rec("Customer", [ID, f("b", dec(10, 2))])], "compatible",
     "Avro Java's SchemaCompatibility ignores logical types; apache-avro alone would reject this")
case("backward: decimal -> string", "BACKWARD", rec("Customer", [ID, f("b", "string")]), [rec("Customer", [ID, f("b", dec(10, 2))])], "compatible", "bytes -> string")
case("backward: invalid logical type is ignored", "BACKWARD", rec("Customer", [ID, f("b", {"type": "bytes", "logicalType": "decimal", "precision": 2, "scale": 5})]), [rec("Customer", [ID, f("b", "bytes")])], "compatible")

addr = rec("Address", [f("street", "string")])
old_refs = rec("Customer", [ID, f("home", addr), f("work", "Address")])
new_refs = rec("Customer", [ID, f("billing", ["null", addr], default=None), f("home", "Address"), f("work", "Address")])
case("backward: a named type defined at a new place", "BACKWARD", new_refs, [old_refs], "compatible",
     "apache-avro compares a reference with a definition as different types: references are expanded first")
new_refs_bad = rec("Customer", [ID, f("billing", ["null", rec("Address", [f("street", "string"), f("zip", "string")])], default=None), f("home", "Address"), f("work", "Address")])
case("backward: a moved named type gains a field without a default", "BACKWARD", new_refs_bad, [old_refs], "incompatible")
node_v1 = rec("Node", [f("value", "int"), f("next", ["null", "Node"], default=None)])
node_v2 = rec("Node", [f("value", "int"), f("label", "string", default=""), f("next", ["null", "Node"], default=None)])
node_v3 = rec("Node", [f("value", "int"), f("label", "string"), f("next", ["null", "Node"], default=None)])
case("backward: recursive record gains a field with a default", "BACKWARD", node_v2, [node_v1], "compatible")
case("backward: recursive record gains a field without a default", "BACKWARD", node_v3, [node_v1], "incompatible")

# FORWARD: the latest (old) schema reads data written with the new one.
case("forward: add a field without a default", "FORWARD", without_default, [v1], "compatible")
case("forward: remove a field without a default", "FORWARD", v1, [without_default], "incompatible")
case("forward: remove a field with a default", "FORWARD", v1, [with_default], "compatible")
case("forward: int -> long", "FORWARD", rec("Customer", [f("id", "long")]), [v1], "incompatible")
case("forward: enum symbol added", "FORWARD", rec("Customer", [ID, f("s", enum_abc)]), [rec("Customer", [ID, f("s", enum_ab)])], "incompatible")
# FULL
case("full: add a field with a default", "FULL", with_default, [v1], "compatible")
case("full: add a field without a default", "FULL", without_default, [v1], "incompatible")
case("full: remove a field without a default", "FULL", v1, [without_default], "incompatible")
case("full: int -> long", "FULL", rec("Customer", [f("id", "long")]), [v1], "incompatible")
# NONE
case("none: string -> int", "NONE", rec("Customer", [ID, f("name", "int")]), [without_default], "compatible")
case("none: unrelated schemas", "NONE", "string", [v1], "compatible")
# TRANSITIVE
b1 = rec("Customer", [ID])
b2 = rec("Customer", [ID, f("name", "string", default="x")])
b3 = rec("Customer", [ID, f("name", "string")])
case("backward: only the latest version counts", "BACKWARD", b3, [b1, b2], "compatible")
case("backward_transitive: every version counts", "BACKWARD_TRANSITIVE", b3, [b1, b2], "incompatible")
f1 = rec("Customer", [ID, f("name", "string")])
f2 = rec("Customer", [ID, f("name", "string", default="x")])
case("forward: only the latest version counts", "FORWARD", b1, [f1, f2], "compatible")
case("forward_transitive: every version counts", "FORWARD_TRANSITIVE", b1, [f1, f2], "incompatible")
case("full: only the latest version counts", "FULL", rec("Customer", [ID, f("name", "string", default="y")]), [b3, b2], "compatible")
case("full: only the latest version counts (2)", "FULL", b3, [b1, b2], "compatible")
case("full_transitive: every version counts", "FULL_TRANSITIVE", b3, [b1, b2], "incompatible")
case("backward_transitive: compatible with every version", "BACKWARD_TRANSITIVE", rec("Customer", [ID, f("name", "string", default="y"), f("age", ["null", "int"], default=None)]), [b1, b2], "compatible")
case("backward: no previous version", "BACKWARD", v1, [], "compatible")

# Debezium envelopes (Connect AvroData output, Debezium 3.1 PostgreSQL)
def value(cols):
    return {"type": "record", "name": "Value", "fields": cols, "connect.name": "lp1.public.customers.Value"}
def envelope(cols):
    src = {"type": "record", "name": "Source", "namespace": "io.debezium.connector.postgresql", "fields": [
        f("version", "string"), f("connector", "string"), f("name", "string"), f("ts_ms", "long"),
        f("snapshot", [{"type": "string", "connect.version": 1, "connect.parameters": {"allowed": "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"}, "connect.default": "false", "connect.name": "io.debezium.data.Enum"}, "null"], default="false"),
        f("db", "string"), f("sequence", ["null", "string"], default=None),
        f("ts_us", ["null", "long"], default=None), f("ts_ns", ["null", "long"], default=None),
        f("schema", "string"), f("table", "string"),
        f("txId", ["null", "long"], default=None), f("lsn", ["null", "long"], default=None), f("xmin", ["null", "long"], default=None)],
        "connect.name": "io.debezium.connector.postgresql.Source"}
    block = {"type": "record", "name": "block", "namespace": "event", "fields": [f("id", "string"), f("total_order", "long"), f("data_collection_order", "long")], "connect.version": 1, "connect.name": "event.block"}
    return {"type": "record", "name": "Envelope", "namespace": "lp1.public.customers", "fields": [
        f("before", ["null", value(cols)], default=None), f("after", ["null", "Value"], default=None),
        f("source", src), f("transaction", ["null", block], default=None), f("op", "string"),
        f("ts_ms", ["null", "long"], default=None), f("ts_us", ["null", "long"], default=None), f("ts_ns", ["null", "long"], default=None)],
        "connect.version": 2, "connect.name": "lp1.public.customers.Envelope"}
base_cols = [f("id", "int"), f("name", ["null", "string"], default=None), f("balance", ["null", dec(10, 2)], default=None),
             f("created_at", ["null", {"type": "long", "connect.version": 1, "connect.name": "io.debezium.time.MicroTimestamp"}], default=None)]
env1 = envelope(base_cols)
case("debezium: nullable column added", "BACKWARD", envelope(base_cols + [f("email", ["null", "string"], default=None)]), [env1], "compatible")
case("debezium: NOT NULL column without default added", "BACKWARD", envelope(base_cols + [f("email", "string")]), [env1], "incompatible")
case("debezium: NOT NULL column with default added", "BACKWARD", envelope(base_cols + [f("email", {"type": "string", "connect.default": "none"}, default="none")]), [env1], "compatible")
case("debezium: int -> bigint", "BACKWARD", envelope([f("id", "long")] + base_cols[1:]), [env1], "compatible")
case("debezium: bigint -> int", "BACKWARD", env1, [envelope([f("id", "long")] + base_cols[1:])], "incompatible")
case("debezium: numeric(10,2) -> numeric(12,2)", "BACKWARD", envelope(base_cols[:2] + [f("balance", ["null", dec(12, 2)], default=None)] + base_cols[3:]), [env1], "compatible")
case("debezium: column type text -> integer", "BACKWARD", envelope([base_cols[0], f("name", ["null", "int"], default=None)] + base_cols[2:]), [env1], "incompatible")
case("debezium: column dropped", "BACKWARD", envelope(base_cols[:1] + base_cols[2:]), [env1], "compatible")
case("debezium: column dropped (forward)", "FORWARD", envelope(base_cols[:1] + base_cols[2:]), [env1], "compatible", "the dropped column is optional: the old reader uses its default")
case("debezium: NOT NULL column without default added (full)", "FULL", envelope(base_cols + [f("email", "string")]), [env1], "incompatible")

# Invalid schemas: rejected before any comparison.
case("invalid: record without fields", "NONE", {"type": "record", "name": "R"}, [], "invalid")
case("invalid: unknown type", "NONE", {"type": "record", "name": "R", "fields": [f("a", "integer")]}, [], "invalid")
case("invalid: default of the wrong type", "NONE", rec("R", [f("a", "int", default="x")]), [], "invalid")
case("invalid: not JSON", "NONE", "{\"type\": ", [], "invalid")

for c in cases:
    c["new"] = c["new"] if isinstance(c["new"], str) and c["name"] == "invalid: not JSON" else json.dumps(c["new"], separators=(",", ":"))
    c["old"] = [json.dumps(o, separators=(",", ":")) for o in c["old"]]
print(json.dumps(cases, indent=1))
