//! One Avro schema as the registry holds it: the text a client registered, the
//! key that decides whether two texts are the same schema, and the parsed form
//! compatibility is checked on.

use std::fmt::Write as _;

use apache_avro::Schema;
use serde_json::Value;

use crate::RegistryError;
use crate::resolve::expand_references;

/// A parsed, valid Avro schema.
#[derive(Debug, Clone)]
pub struct AvroSchema {
    text: String,
    identity: String,
    resolved: Schema,
}

impl AvroSchema {
    /// Parse and validate a schema text, as the Confluent registry does for a
    /// schema being registered (field defaults included).
    ///
    /// Logical types are ignored for validity and compatibility, as Avro Java
    /// (and so Confluent) ignores them: Debezium's `numeric(10,2)` ->
    /// `numeric(12,2)` only changes a decimal's precision, which Confluent
    /// accepts under BACKWARD, and an invalid logical type makes Avro Java fall
    /// back to the underlying type instead of failing. They still count for
    /// identity: those two schemas get different ids.
    pub fn parse(text: &str) -> Result<Self, RegistryError> {
        let json: Value = serde_json::from_str(text)
            .map_err(|e| RegistryError::InvalidSchema(format!("not JSON: {e}")))?;
        let mut identity = String::with_capacity(text.len());
        write_type(&json, &mut identity);
        let mut plain = json;
        strip_logical_types(&mut plain);
        let parsed =
            Schema::parse(&plain).map_err(|e| RegistryError::InvalidSchema(e.to_string()))?;
        Ok(Self {
            text: text.to_owned(),
            identity,
            resolved: expand_references(&parsed),
        })
    }

    /// The schema text as it was first registered (what clients get back).
    #[must_use]
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The normalized JSON form that decides identity: two texts with the same
    /// identity are the same schema (same id, same version in a subject).
    ///
    /// It is the schema's JSON with whitespace removed, object keys sorted and
    /// `{"type": "int"}` written as `"int"`. It keeps every attribute — docs,
    /// defaults, logical types, Connect's `connect.*` properties — unlike
    /// Avro's Parsing Canonical Form, which drops them and would give a schema
    /// whose default or decimal precision changed the id of the old one.
    #[must_use]
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// The parsed schema with logical types dropped and named-type references
    /// expanded: the form `apache-avro`'s compatibility checker gets.
    pub(crate) fn resolved(&self) -> &Schema {
        &self.resolved
    }
}

/// Primitive type names: `{"type": "<one of these>"}` with no other key is the
/// same schema as the bare name.
const PRIMITIVES: [&str; 8] = [
    "null", "boolean", "int", "long", "float", "double", "bytes", "string",
];

/// Write a schema (a value in a type position) in normalized form.
fn write_type(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            if map.len() == 1
                && let Some(Value::String(name)) = map.get("type")
                && PRIMITIVES.contains(&name.as_str())
            {
                write_value(&Value::String(name.clone()), out);
                return;
            }
            write_object(map, out, |key, item, out| match key {
                "type" | "items" | "values" => write_type(item, out),
                "fields" => write_fields(item, out),
                _ => write_value(item, out),
            });
        }
        Value::Array(branches) => write_array(branches, out, write_type),
        other => write_value(other, out),
    }
}

/// Write a record's `fields` array: each field's `type` is a type position.
fn write_fields(value: &Value, out: &mut String) {
    let Value::Array(fields) = value else {
        write_value(value, out);
        return;
    };
    write_array(fields, out, |field, out| match field {
        Value::Object(map) => write_object(map, out, |key, item, out| {
            if key == "type" {
                write_type(item, out);
            } else {
                write_value(item, out);
            }
        }),
        other => write_value(other, out),
    });
}

/// Write any JSON value (a default, a doc, a custom property) compactly with
/// its object keys sorted, whatever order `serde_json`'s map keeps.
fn write_value(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => write_object(map, out, |_, item, out| write_value(item, out)),
        Value::Array(items) => write_array(items, out, write_value),
        scalar => {
            // Strings, numbers, booleans and null: serde_json's compact form.
            let _ = write!(out, "{scalar}");
        }
    }
}

/// `{"a":…,"b":…}` with keys sorted; `member` writes each value.
fn write_object(
    map: &serde_json::Map<String, Value>,
    out: &mut String,
    member: impl Fn(&str, &Value, &mut String),
) {
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    out.push('{');
    for (i, key) in keys.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_value(&Value::String(key.clone()), out);
        out.push(':');
        member(key, &map[key], out);
    }
    out.push('}');
}

/// `[…,…]`; `item` writes each element.
fn write_array(items: &[Value], out: &mut String, item: impl Fn(&Value, &mut String)) {
    out.push('[');
    for (i, element) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        item(element, out);
    }
    out.push(']');
}

/// Remove `logicalType` from every schema object (type positions only: a
/// default value or custom property may legitimately hold that key).
fn strip_logical_types(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("logicalType");
            for key in ["type", "items", "values"] {
                if let Some(inner) = map.get_mut(key) {
                    strip_logical_types(inner);
                }
            }
            if let Some(Value::Array(fields)) = map.get_mut("fields") {
                for field in fields {
                    if let Some(field_type) = field.get_mut("type") {
                        strip_logical_types(field_type);
                    }
                }
            }
        }
        Value::Array(branches) => branches.iter_mut().for_each(strip_logical_types),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_key_order_and_primitive_objects_do_not_change_identity() {
        let a = AvroSchema::parse(
            r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":["null","string"],"default":null}]}"#,
        )
        .unwrap();
        let b = AvroSchema::parse(
            r#"{
                "name": "R",
                "fields": [
                    {"type": {"type": "int"}, "name": "a"},
                    {"default": null, "name": "b", "type": ["null", {"type": "string"}]}
                ],
                "type": "record"
            }"#,
        )
        .unwrap();
        assert_eq!(a.identity(), b.identity());
        assert_ne!(a.text(), b.text());
    }

    #[test]
    fn defaults_logical_types_and_connect_properties_change_identity() {
        let base = r#"{"type":"record","name":"R","fields":[{"name":"a","type":DECIMAL}]}"#;
        let decimal = |p: u32| {
            format!(
                r#"{{"type":"bytes","logicalType":"decimal","precision":{p},"scale":2,"connect.parameters":{{"connect.decimal.precision":"{p}"}}}}"#
            )
        };
        let ten = AvroSchema::parse(&base.replace("DECIMAL", &decimal(10))).unwrap();
        let twelve = AvroSchema::parse(&base.replace("DECIMAL", &decimal(12))).unwrap();
        assert_ne!(ten.identity(), twelve.identity());

        let plain = AvroSchema::parse(
            r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}"#,
        )
        .unwrap();
        let defaulted = AvroSchema::parse(
            r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int","default":0}]}"#,
        )
        .unwrap();
        let connect = AvroSchema::parse(
            r#"{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"int","connect.type":"int16"}}]}"#,
        )
        .unwrap();
        assert_ne!(plain.identity(), defaulted.identity());
        assert_ne!(plain.identity(), connect.identity());
    }

    #[test]
    fn invalid_schemas_are_rejected() {
        for text in [
            "",
            "{",
            r#"{"type":"record","name":"R"}"#,
            r#"{"type":"record","name":"R","fields":[{"name":"a","type":"integer"}]}"#,
            r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int","default":"x"}]}"#,
        ] {
            let error = AvroSchema::parse(text).expect_err(text);
            assert!(
                matches!(error, RegistryError::InvalidSchema(_)),
                "{text}: {error}"
            );
        }
    }

    #[test]
    fn a_logical_type_key_inside_a_default_is_kept() {
        let mut value: Value = serde_json::from_str(
            r#"{"type":"record","name":"R","logicalType":"x","fields":[{"name":"a","type":{"type":"record","name":"S","fields":[{"name":"logicalType","type":"string"}]},"default":{"logicalType":"kept"}}]}"#,
        )
        .unwrap();
        strip_logical_types(&mut value);
        assert!(value.get("logicalType").is_none());
        assert_eq!(value["fields"][0]["default"]["logicalType"], "kept");
    }
}
