//! Expanding named-type references before a compatibility check.
//!
//! `apache-avro` parses the second use of a named type as `Schema::Ref` and
//! its checker compares a `Ref` with a full definition as different types. A
//! schema that defines `Address` in another field than before (Avro Java sees
//! the same type object in both places) would then be reported incompatible.
//! So every non-recursive reference is replaced by its definition first;
//! references inside their own definition (recursive types) stay, and the
//! checker matches those by name.

use std::collections::HashMap;

use apache_avro::Schema;
use apache_avro::schema::{Name, UnionSchema};

/// `schema` with every non-recursive named-type reference replaced by the
/// type's definition.
pub(crate) fn expand_references(schema: &Schema) -> Schema {
    let mut definitions = HashMap::new();
    expand(schema, &mut definitions, &mut Vec::new())
}

fn expand(
    schema: &Schema,
    definitions: &mut HashMap<Name, Schema>,
    open: &mut Vec<Name>,
) -> Schema {
    match schema {
        Schema::Ref { name } => {
            if open.contains(name) {
                schema.clone()
            } else {
                definitions
                    .get(name)
                    .cloned()
                    .unwrap_or_else(|| schema.clone())
            }
        }
        Schema::Record(record) => {
            open.push(record.name.clone());
            let mut expanded = record.clone();
            for field in &mut expanded.fields {
                field.schema = expand(&field.schema, definitions, open);
            }
            open.pop();
            let expanded = Schema::Record(expanded);
            definitions.insert(record.name.clone(), expanded.clone());
            expanded
        }
        Schema::Enum(named) => {
            definitions.insert(named.name.clone(), schema.clone());
            schema.clone()
        }
        Schema::Fixed(named) => {
            definitions.insert(named.name.clone(), schema.clone());
            schema.clone()
        }
        Schema::Array(array) => {
            let mut expanded = array.clone();
            expanded.items = Box::new(expand(&array.items, definitions, open));
            Schema::Array(expanded)
        }
        Schema::Map(map) => {
            let mut expanded = map.clone();
            expanded.types = Box::new(expand(&map.types, definitions, open));
            Schema::Map(expanded)
        }
        Schema::Union(union) => {
            let variants: Vec<Schema> = union
                .variants()
                .iter()
                .map(|variant| expand(variant, definitions, open))
                .collect();
            // Replacing a reference by its definition keeps the variants
            // distinct, so this cannot fail; keep the original if it ever does.
            UnionSchema::new(variants).map_or_else(|_| schema.clone(), Schema::Union)
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(schema: &Schema) -> usize {
        match schema {
            Schema::Ref { .. } => 1,
            Schema::Record(record) => record.fields.iter().map(|f| refs(&f.schema)).sum(),
            Schema::Array(array) => refs(&array.items),
            Schema::Map(map) => refs(&map.types),
            Schema::Union(union) => union.variants().iter().map(refs).sum(),
            _ => 0,
        }
    }

    #[test]
    fn references_are_replaced_by_definitions() {
        let schema = Schema::parse_str(
            r#"{"type":"record","name":"C","fields":[
                {"name":"home","type":{"type":"record","name":"Address","fields":[{"name":"s","type":"string"}]}},
                {"name":"work","type":["null","Address"]},
                {"name":"all","type":{"type":"array","items":"Address"}},
                {"name":"kind","type":{"type":"enum","name":"Kind","symbols":["A"]}},
                {"name":"kinds","type":{"type":"map","values":"Kind"}}
            ]}"#,
        )
        .unwrap();
        assert_eq!(refs(&schema), 3);
        assert_eq!(refs(&expand_references(&schema)), 0);
    }

    #[test]
    fn recursive_references_stay() {
        let schema = Schema::parse_str(
            r#"{"type":"record","name":"Node","fields":[{"name":"next","type":["null","Node"]}]}"#,
        )
        .unwrap();
        assert_eq!(refs(&expand_references(&schema)), 1);
    }
}
