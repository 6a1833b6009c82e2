//! Schema evolution with a base check: add an optional column, drop a
//! non-key column, rename a column, widen a column's type the way the
//! Iceberg spec allows. Nothing else.
//!
//! iceberg-rust 0.10 has no type widening, and its metadata builder accepts
//! ILLEGAL changes (long -> int, string -> long) without a word
//! (../shared/design/ICEBERG.md), so every new schema is checked here against
//! the current one before it is committed:
//!
//! - a column keeps its field id, requiredness and type, except that a
//!   primitive type may be PROMOTED: int -> long, float -> double,
//!   decimal(P, S) -> decimal(P', S) with P' > P (same scale);
//! - a column may be renamed (same field id: old files read under the new
//!   name, since readers resolve columns by id);
//! - a new column is optional, top-level, and gets a field id above every id
//!   the table ever used;
//! - a non-key column may be dropped (its field id is never reused);
//! - nothing else: no narrowing, no other type change,
//!   no requiredness change (required -> optional is legal Iceberg, but not
//!   offered here), no change inside a struct, list or map, no change of the
//!   identifier fields.
//!
//! The new schema is committed with the same field ids and made current, in
//! the next metadata file, through the same compare-and-swap as snapshot
//! commits ([`Lake::commit_metadata`]): a schema change computed against a
//! stale table is [`CommitError::Conflict`]. Old data files are not
//! rewritten: readers promote their values (an int file reads as long).
//!
//! The same commit adds a snapshot with no file changes (operation
//! `replace`, the writer's `lossproof.*` properties carried forward) whose
//! schema id is the new schema's: iceberg-rust 0.10 scans, and so
//! [`Lake::scan`] and the DataFusion tables of [`Lake::session`], read with
//! the schema of the SNAPSHOT they scan, not the table's current schema.
//! Without that snapshot they would read old types until the next data
//! commit, and a DataFusion query would fail on an added column ("Column …
//! not found in table"). A table with no snapshot yet gets no such snapshot.

use std::collections::HashSet;

use iceberg::TableIdent;
use iceberg::spec::{
    NestedField, NestedFieldRef, PrimitiveType, Schema, TableMetadataBuilder, Type,
};
use iceberg::table::Table;

use super::{Commit, CommitError, Lake, latest_properties};

/// The largest decimal precision Iceberg has.
const MAX_DECIMAL_PRECISION: u32 = 38;

/// One schema change [`Lake::evolve_schema`] makes.
#[derive(Debug, Clone, PartialEq)]
pub enum SchemaChange {
    /// A new optional top-level column (old rows read NULL).
    AddColumn { name: String, field_type: Type },
    /// Promote a top-level column's type (int -> long, float -> double,
    /// decimal precision up). Widening to the type it already has is no change.
    Widen { column: String, to: PrimitiveType },
    /// Remove a column that is not part of the key. Old files keep their
    /// values; readers no longer see them (its field id is never reused).
    DropColumn { column: String },
    /// Give a column a new name; it keeps its field id, so every file
    /// written before reads under the new name.
    Rename { column: String, to: String },
}

impl SchemaChange {
    /// [`SchemaChange::AddColumn`] of a primitive type.
    #[must_use]
    pub fn add_column(name: &str, field_type: PrimitiveType) -> Self {
        Self::AddColumn {
            name: name.to_owned(),
            field_type: Type::Primitive(field_type),
        }
    }

    /// [`SchemaChange::DropColumn`].
    #[must_use]
    pub fn drop_column(column: &str) -> Self {
        Self::DropColumn {
            column: column.to_owned(),
        }
    }

    /// [`SchemaChange::Rename`].
    #[must_use]
    pub fn rename(column: &str, to: &str) -> Self {
        Self::Rename {
            column: column.to_owned(),
            to: to.to_owned(),
        }
    }

    /// [`SchemaChange::Widen`].
    #[must_use]
    pub fn widen(column: &str, to: PrimitiveType) -> Self {
        Self::Widen {
            column: column.to_owned(),
            to,
        }
    }
}

/// Why a schema change was not made.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    /// The change breaks the rules above; nothing was written.
    #[error(
        "schema change refused on {table}: column `{column}` from {from} to {to}: {reason} \
         (allowed: new optional columns; dropping a non-key column; int -> long, float -> double, \
         decimal(P,S) -> decimal(P',S) with P' > P)"
    )]
    Refused {
        table: TableIdent,
        column: String,
        /// The column's type before (`absent` for a new column).
        from: String,
        /// The type asked for (`absent` for a dropped column).
        to: String,
        reason: String,
    },
    /// The commit itself failed (a conflict: reload, recompute, retry).
    #[error(transparent)]
    Commit(#[from] CommitError),
    #[error("schema change on {table} failed: {source}")]
    Iceberg {
        table: TableIdent,
        #[source]
        source: iceberg::Error,
    },
}

impl SchemaError {
    /// True for a [`CommitError::Conflict`].
    #[must_use]
    pub fn is_conflict(&self) -> bool {
        matches!(self, Self::Commit(e) if e.is_conflict())
    }
}

impl Lake {
    /// Apply `changes` to `base`'s current schema and commit the result
    /// (see [`Lake::update_schema`]). With nothing to change, `base` is
    /// returned and nothing is written.
    pub async fn evolve_schema(
        &self,
        base: &Table,
        changes: &[SchemaChange],
    ) -> Result<Table, SchemaError> {
        let meta = base.metadata();
        let current = meta.current_schema();
        let refused = |column: &str, from: String, to: String, reason: &str| SchemaError::Refused {
            table: base.identifier().clone(),
            column: column.to_owned(),
            from,
            to,
            reason: reason.to_owned(),
        };
        let mut fields: Vec<NestedFieldRef> = current.as_struct().fields().to_vec();
        let mut next_id = meta.last_column_id().max(current.highest_field_id()) + 1;
        for change in changes {
            match change {
                SchemaChange::AddColumn { name, field_type } => {
                    if let Some(existing) = fields.iter().find(|f| &f.name == name) {
                        return Err(refused(
                            name,
                            existing.field_type.to_string(),
                            field_type.to_string(),
                            "a column of that name exists",
                        ));
                    }
                    if !field_type.is_primitive() {
                        return Err(refused(
                            name,
                            "absent".to_owned(),
                            field_type.to_string(),
                            "only primitive columns can be added here",
                        ));
                    }
                    fields.push(NestedField::optional(next_id, name, field_type.clone()).into());
                    next_id += 1;
                }
                SchemaChange::Widen { column, to } => {
                    let Some(slot) = fields.iter_mut().find(|f| &f.name == column) else {
                        return Err(refused(
                            column,
                            "absent".to_owned(),
                            to.to_string(),
                            "no such column",
                        ));
                    };
                    let mut widened = NestedField::clone(slot);
                    widened.field_type = Box::new(Type::Primitive(to.clone()));
                    *slot = widened.into();
                }
                SchemaChange::Rename { column, to } => {
                    if let Some(existing) = fields.iter().find(|f| &f.name == to) {
                        return Err(refused(
                            to,
                            existing.field_type.to_string(),
                            existing.field_type.to_string(),
                            "a column of that name exists",
                        ));
                    }
                    let Some(slot) = fields.iter_mut().find(|f| &f.name == column) else {
                        return Err(refused(
                            column,
                            "absent".to_owned(),
                            "absent".to_owned(),
                            "no such column",
                        ));
                    };
                    let mut renamed = NestedField::clone(slot);
                    renamed.name.clone_from(to);
                    *slot = renamed.into();
                }
                SchemaChange::DropColumn { column } => {
                    let before = fields.len();
                    fields.retain(|f| &f.name != column);
                    if fields.len() == before {
                        return Err(refused(
                            column,
                            "absent".to_owned(),
                            "absent".to_owned(),
                            "no such column",
                        ));
                    }
                }
            }
        }
        let schema = Schema::builder()
            .with_fields(fields)
            .with_identifier_field_ids(current.identifier_field_ids())
            .build()
            .map_err(|source| SchemaError::Iceberg {
                table: base.identifier().clone(),
                source,
            })?;
        self.update_schema(base, schema).await
    }

    /// Make `schema` the current schema of `base`'s table, if it is a legal
    /// evolution of the current one ([`check_evolution`]) and the catalog
    /// still points at `base` (else [`CommitError::Conflict`]). `schema`
    /// keeps the current field ids; its schema id is assigned here. If it
    /// equals the current schema, `base` is returned and nothing is written.
    pub async fn update_schema(&self, base: &Table, schema: Schema) -> Result<Table, SchemaError> {
        let meta = base.metadata();
        check_evolution(
            base.identifier(),
            meta.current_schema(),
            meta.last_column_id(),
            &schema,
        )?;
        if meta.current_schema().as_struct() == schema.as_struct() {
            return Ok(base.clone());
        }
        let iceberg = |source| SchemaError::Iceberg {
            table: base.identifier().clone(),
            source,
        };
        if meta.current_snapshot().is_none() {
            let metadata = TableMetadataBuilder::new_from_metadata(
                meta.clone(),
                base.metadata_location().map(str::to_owned),
            )
            .add_current_schema(schema)
            .and_then(TableMetadataBuilder::build)
            .map_err(iceberg)?
            .metadata;
            return Ok(self.commit_metadata(base, &metadata).await?);
        }
        // iceberg-rust scans read with the schema of the snapshot they scan:
        // record the new schema in a snapshot of its own (no file changes).
        let evolved = TableMetadataBuilder::new_from_metadata(meta.clone(), None)
            .add_current_schema(schema)
            .and_then(TableMetadataBuilder::build)
            .map_err(iceberg)?
            .metadata;
        let location = base.metadata_location_result().map_err(iceberg)?.to_owned();
        let staged = super::commit::table_at(base, evolved, location).map_err(iceberg)?;
        let marker = Commit::replace(Vec::new(), Vec::new(), 0)
            .with_properties(latest_properties(base, "lossproof."));
        let metadata = self.stage(&staged, marker).await?;
        Ok(self.commit_metadata(base, &metadata).await?)
    }
}

/// Whether `new` is a legal evolution of `current` (rules in the module
/// docs); `last_column_id` is the table's highest field id ever assigned.
pub fn check_evolution(
    table: &TableIdent,
    current: &Schema,
    last_column_id: i32,
    new: &Schema,
) -> Result<(), SchemaError> {
    let refused = |column: &str, from: String, to: String, reason: String| SchemaError::Refused {
        table: table.clone(),
        column: column.to_owned(),
        from,
        to,
        reason,
    };
    let old_ids: HashSet<i32> = current.as_struct().fields().iter().map(|f| f.id).collect();
    for old in current.as_struct().fields() {
        let from = old.field_type.to_string();
        let Some(field) = new.as_struct().field_by_id(old.id) else {
            if current.identifier_field_ids().any(|id| id == old.id) {
                return Err(refused(
                    &old.name,
                    from,
                    "absent".to_owned(),
                    "a key column cannot be dropped".to_owned(),
                ));
            }
            continue;
        };
        let to = field.field_type.to_string();
        if field.required != old.required {
            let reason = if old.required {
                "required -> optional is not supported here"
            } else {
                "optional -> required would make old rows invalid"
            };
            return Err(refused(&old.name, from, to, reason.to_owned()));
        }
        if let Err(reason) = check_promotion(&old.field_type, &field.field_type) {
            return Err(refused(&old.name, from, to, reason.to_owned()));
        }
    }
    for field in new.as_struct().fields() {
        if old_ids.contains(&field.id) {
            continue;
        }
        let to = field.field_type.to_string();
        if field.required {
            return Err(refused(
                &field.name,
                "absent".to_owned(),
                to,
                "a new column must be optional (old rows have no value)".to_owned(),
            ));
        }
        if current.field_by_name(&field.name).is_some() {
            return Err(refused(
                &field.name,
                "absent".to_owned(),
                to,
                format!(
                    "a column of that name exists (a new field id {} would replace it)",
                    field.id
                ),
            ));
        }
        let mut ids = vec![field.id];
        collect_nested_ids(&field.field_type, &mut ids);
        if let Some(id) = ids.into_iter().find(|id| *id <= last_column_id) {
            return Err(refused(
                &field.name,
                "absent".to_owned(),
                to,
                format!("field id {id} is not above the table's last column id {last_column_id}"),
            ));
        }
    }
    let (old_keys, new_keys): (Vec<i32>, Vec<i32>) = (
        current.identifier_field_ids().collect(),
        new.identifier_field_ids().collect(),
    );
    if old_keys.iter().collect::<HashSet<_>>() != new_keys.iter().collect::<HashSet<_>>() {
        return Err(refused(
            "(identifier fields)",
            format!("{old_keys:?}"),
            format!("{new_keys:?}"),
            "identifier fields cannot change".to_owned(),
        ));
    }
    Ok(())
}

/// Whether a column of type `from` may become `to`: equal types, or a
/// primitive promotion the Iceberg spec allows. The error is the reason.
pub fn check_promotion(from: &Type, to: &Type) -> Result<(), &'static str> {
    use PrimitiveType::{Decimal, Double, Float, Int, Long};
    if from == to {
        return Ok(());
    }
    let (Type::Primitive(from), Type::Primitive(to)) = (from, to) else {
        return Err("changes inside a struct, list or map, or to or from one, are not supported");
    };
    match (from, to) {
        (Int, Long) | (Float, Double) => Ok(()),
        (
            Decimal {
                precision: p,
                scale: s,
            },
            Decimal {
                precision: p2,
                scale: s2,
            },
        ) => {
            if s != s2 {
                Err("a decimal's scale cannot change")
            } else if p2 < p {
                Err("narrowing a decimal's precision loses values")
            } else if *p2 > MAX_DECIMAL_PRECISION {
                Err("a decimal's precision is at most 38")
            } else {
                Ok(())
            }
        }
        (Long, Int) | (Double, Float) => Err("narrowing loses values"),
        _ => Err("not a type promotion the Iceberg spec allows"),
    }
}

/// Every field id inside a nested type.
fn collect_nested_ids(field_type: &Type, ids: &mut Vec<i32>) {
    match field_type {
        Type::Primitive(_) => {}
        Type::Struct(s) => {
            for f in s.fields() {
                ids.push(f.id);
                collect_nested_ids(&f.field_type, ids);
            }
        }
        Type::List(l) => {
            ids.push(l.element_field.id);
            collect_nested_ids(&l.element_field.field_type, ids);
        }
        Type::Map(m) => {
            for f in [&m.key_field, &m.value_field] {
                ids.push(f.id);
                collect_nested_ids(&f.field_type, ids);
            }
        }
    }
}
