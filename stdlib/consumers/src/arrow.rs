//! What both reference consumers share: the lake tables a workload's
//! source tables map to, and turning decoded rows into Arrow batches of
//! those tables.

use std::sync::Arc;

use arrow_array::builder::{BooleanBuilder, LargeBinaryBuilder, PrimitiveBuilder, StringBuilder};
use arrow_array::types::{
    Date32Type, Decimal128Type, Float32Type, Float64Type, Int32Type, Int64Type,
    Time64MicrosecondType, TimestampMicrosecondType,
};
use arrow_array::{ArrayRef, ArrowPrimitiveType, ListArray, PrimitiveArray, RecordBatch};
use arrow_schema::{DataType, FieldRef};
use iceberg::spec::{ListType, NestedField, PrimitiveType, Schema, Type};
use iceberg::{NamespaceIdent, TableCreation, TableIdent};
use lossproof_lang::ColumnType;
use lossproof_lang::vocabulary::{TableSig, WorkloadSig};
use lossproof_runtime::Lake;
use lossproof_runtime::change_event::{Cell, Row};

use crate::error::{Error, Result};

/// The Iceberg schema a source table maps to: the vocabulary's columns in
/// order, field ids from 1, primary-key columns required and declared as the
/// identifier fields, every other column optional; an array column is a
/// list of optional elements, whose field ids follow the columns' (the ids
/// a catalog gives a new table's schema).
pub fn iceberg_schema(table: &TableSig) -> Result<Schema> {
    let mut fields = Vec::new();
    let mut keys = Vec::new();
    let too_many = || Error::Unsupported(format!("table {}: too many columns", table.name));
    let mut next_element = i32::try_from(table.columns.len() + 1).map_err(|_| too_many())?;
    for (i, column) in table.columns.iter().enumerate() {
        let id = i32::try_from(i + 1).map_err(|_| too_many())?;
        let kind = iceberg_type(&column.sql_type, &mut next_element)?;
        let field = if table.is_key(&column.name) {
            keys.push(id);
            NestedField::required(id, &column.name, kind)
        } else {
            NestedField::optional(id, &column.name, kind)
        };
        fields.push(Arc::new(field));
    }
    Schema::builder()
        .with_fields(fields)
        .with_identifier_field_ids(keys)
        .build()
        .map_err(Error::iceberg(format!("table {}", table.name)))
}

/// The Iceberg type of a column type: a primitive, or for an array a list
/// of optional elements whose element takes the field id `next_element`
/// (then the next).
pub(crate) fn iceberg_type(column_type: &ColumnType, next_element: &mut i32) -> Result<Type> {
    let ColumnType::Array(element) = column_type else {
        return primitive_type(column_type).map(Type::Primitive);
    };
    let element = NestedField::list_element(
        *next_element,
        Type::Primitive(primitive_type(element)?),
        false,
    );
    *next_element += 1;
    Ok(Type::List(ListType::new(element.into())))
}

/// The Iceberg type of a scalar column type, as the consumers write what
/// Debezium sends for it.
fn primitive_type(column_type: &ColumnType) -> Result<PrimitiveType> {
    Ok(match column_type {
        ColumnType::BigInt => PrimitiveType::Long,
        ColumnType::Integer | ColumnType::SmallInt => PrimitiveType::Int,
        // uuid, json and jsonb as Debezium sends them: their PostgreSQL
        // text; char(n) with PostgreSQL's padding; an interval as
        // Debezium's ISO 8601 string (its months, days and time apart,
        // exact).
        ColumnType::Text
        | ColumnType::Varchar(_)
        | ColumnType::Char(_)
        | ColumnType::Uuid
        | ColumnType::Json
        | ColumnType::Jsonb
        | ColumnType::Interval => PrimitiveType::String,
        ColumnType::Boolean => PrimitiveType::Boolean,
        ColumnType::Timestamptz => PrimitiveType::Timestamptz,
        // Debezium's io.debezium.time types (time.precision.mode adaptive):
        // Date in days, MicroTime and MicroTimestamp in microseconds.
        ColumnType::Timestamp => PrimitiveType::Timestamp,
        ColumnType::Date => PrimitiveType::Date,
        ColumnType::Time => PrimitiveType::Time,
        ColumnType::Bytea => PrimitiveType::Binary,
        ColumnType::Real => PrimitiveType::Float,
        ColumnType::DoublePrecision => PrimitiveType::Double,
        ColumnType::Numeric(Some((precision, scale))) => PrimitiveType::Decimal {
            precision: *precision,
            scale: *scale,
        },
        // An Iceberg decimal has a fixed scale; an array is no primitive.
        ColumnType::Numeric(None) | ColumnType::Array(_) => {
            return Err(Error::Unsupported(format!(
                "no Iceberg type for the column type `{column_type}`"
            )));
        }
    })
}

/// The Avro type name (as [`lossproof_runtime::change_event::RowChange::columns`]
/// spells it) Debezium uses for a column of this Iceberg type: a
/// primitive's, `array<…>` of a list's element.
#[must_use]
pub fn debezium_type_name(kind: &Type) -> String {
    match kind {
        Type::Primitive(kind) => primitive_type_name(kind),
        Type::List(list) => format!(
            "array<{}>",
            debezium_type_name(&list.element_field.field_type)
        ),
        Type::Struct(_) => "record".into(),
        Type::Map(_) => "map".into(),
    }
}

fn primitive_type_name(kind: &PrimitiveType) -> String {
    match kind {
        // Debezium's Date is days in an int, MicroTime and MicroTimestamp
        // microseconds in a long.
        PrimitiveType::Long | PrimitiveType::Time | PrimitiveType::Timestamp => "long".into(),
        PrimitiveType::Int | PrimitiveType::Date => "int".into(),
        PrimitiveType::Boolean => "boolean".into(),
        PrimitiveType::Double => "double".into(),
        PrimitiveType::Float => "float".into(),
        PrimitiveType::Binary => "bytes".into(),
        PrimitiveType::Decimal { precision, scale } => format!("decimal({precision},{scale})"),
        // Strings, and timestamptz as io.debezium.time.ZonedTimestamp.
        _ => "string".into(),
    }
}

/// A lake table of a consumer: where it is and what it looks like.
#[derive(Debug, Clone)]
pub struct LakeTable {
    pub source_table: String,
    pub ident: TableIdent,
    pub schema: Schema,
    /// Field ids of the primary key.
    pub key_ids: Vec<i32>,
}

/// Create (if missing) `namespace` and one table per source table of
/// `workload`, named as the source table.
pub async fn ensure_tables(
    lake: &Lake,
    namespace: &str,
    workload: &WorkloadSig,
) -> Result<Vec<LakeTable>> {
    let ns: NamespaceIdent = lake
        .ensure_namespace(namespace)
        .await
        .map_err(Error::iceberg(format!("namespace {namespace}")))?;
    let mut tables = Vec::new();
    for table in &workload.tables {
        let schema = iceberg_schema(table)?;
        let ident = TableIdent::new(ns.clone(), table.name.clone());
        let exists = lake
            .catalog()
            .table_exists(&ident)
            .await
            .map_err(Error::iceberg(ident.to_string()))?;
        if !exists {
            let creation = TableCreation::builder()
                .name(table.name.clone())
                .schema(schema.clone())
                .build();
            lake.catalog()
                .create_table(&ns, creation)
                .await
                .map_err(Error::iceberg(format!("create {ident}")))?;
        }
        let key_ids = schema.identifier_field_ids().collect();
        tables.push(LakeTable {
            source_table: table.name.clone(),
            ident,
            schema,
            key_ids,
        });
    }
    Ok(tables)
}

/// `rows` as one Arrow batch of `schema` (field ids in the metadata, as the
/// Iceberg writers need). A column missing from a row is NULL; a value that
/// does not fit its column is an error naming both.
pub fn to_arrow(schema: &Schema, rows: &[&Row]) -> Result<RecordBatch> {
    let arrow_schema = Arc::new(
        iceberg::arrow::schema_to_arrow_schema(schema)
            .map_err(Error::iceberg("the Arrow schema"))?,
    );
    let mut columns: Vec<ArrayRef> = Vec::new();
    for field in schema.as_struct().fields() {
        let name = field.name.as_str();
        let cells: Vec<&Cell> = rows
            .iter()
            .map(|r| r.get(name).unwrap_or(&Cell::Null))
            .collect();
        let bad = |cell: &Cell| {
            Error::Value(format!(
                "column {name} ({}) cannot hold {cell:?}",
                field.field_type
            ))
        };
        let unsupported = || {
            Error::Unsupported(format!(
                "column {name}: {} is not supported",
                field.field_type
            ))
        };
        columns.push(match field.field_type.as_ref() {
            Type::Primitive(kind) => column(name, kind, &cells, &bad)?,
            Type::List(list) => {
                let (Type::Primitive(kind), Some(DataType::List(element))) = (
                    list.element_field.field_type.as_ref(),
                    arrow_schema
                        .field_with_name(name)
                        .ok()
                        .map(arrow_schema::Field::data_type),
                ) else {
                    return Err(unsupported());
                };
                list_column(name, kind, element.clone(), &cells, &bad)?
            }
            _ => return Err(unsupported()),
        });
    }
    RecordBatch::try_new(arrow_schema, columns).map_err(Error::arrow("the batch"))
}

/// One Arrow column of Iceberg type `kind` holding `cells` (`bad` names a
/// cell the type cannot hold). Debezium's encodings: integers for `Int`
/// and `Long`, days for `Date`, microseconds for `Time` and `Timestamp`, an
/// RFC 3339 string or microseconds for `Timestamptz`.
fn column(
    name: &str,
    kind: &PrimitiveType,
    cells: &[&Cell],
    bad: &dyn Fn(&Cell) -> Error,
) -> Result<ArrayRef> {
    let int = |cell: &Cell| match cell {
        Cell::Int(i) => Some(*i),
        _ => None,
    };
    let int32 = |cell: &Cell| int(cell).and_then(|i| i32::try_from(i).ok());
    Ok(match kind {
        PrimitiveType::Long => Arc::new(primitive::<Int64Type>(cells, bad, int)?),
        PrimitiveType::Int => Arc::new(primitive::<Int32Type>(cells, bad, int32)?),
        PrimitiveType::Date => Arc::new(primitive::<Date32Type>(cells, bad, int32)?),
        PrimitiveType::Time => Arc::new(primitive::<Time64MicrosecondType>(cells, bad, int)?),
        PrimitiveType::Timestamp => {
            Arc::new(primitive::<TimestampMicrosecondType>(cells, bad, int)?)
        }
        PrimitiveType::Timestamptz => Arc::new(
            primitive::<TimestampMicrosecondType>(cells, bad, |cell| match cell {
                Cell::Text(t) => chrono::DateTime::parse_from_rfc3339(t)
                    .ok()
                    .map(|t| t.timestamp_micros()),
                Cell::Int(micros) => Some(*micros),
                _ => None,
            })?
            .with_timezone("+00:00"),
        ),
        PrimitiveType::Double => {
            Arc::new(primitive::<Float64Type>(cells, bad, |cell| match cell {
                Cell::Float(v) => Some(*v),
                _ => None,
            })?)
        }
        // A real's value, widened on the way: exact back.
        #[expect(clippy::cast_possible_truncation, reason = "a real's value")]
        PrimitiveType::Float => {
            Arc::new(primitive::<Float32Type>(cells, bad, |cell| match cell {
                Cell::Float(v) => Some(*v as f32),
                _ => None,
            })?)
        }
        PrimitiveType::Decimal { precision, scale } => {
            let unsupported =
                || Error::Unsupported(format!("column {name}: decimal({precision},{scale})"));
            let p = u8::try_from(*precision).map_err(|_| unsupported())?;
            let s = i8::try_from(*scale).map_err(|_| unsupported())?;
            Arc::new(
                primitive::<Decimal128Type>(cells, bad, |cell| match cell {
                    Cell::Decimal(t) | Cell::Text(t) => unscaled(t, *precision, *scale),
                    _ => None,
                })?
                .with_precision_and_scale(p, s)
                .map_err(Error::arrow(format!("column {name}")))?,
            )
        }
        PrimitiveType::Boolean => {
            let mut b = BooleanBuilder::new();
            for cell in cells {
                match cell {
                    Cell::Null => b.append_null(),
                    Cell::Bool(v) => b.append_value(*v),
                    other => return Err(bad(other)),
                }
            }
            Arc::new(b.finish())
        }
        PrimitiveType::String => {
            let mut b = StringBuilder::new();
            for cell in cells {
                match cell {
                    Cell::Null => b.append_null(),
                    Cell::Text(t) => b.append_value(t),
                    other => return Err(bad(other)),
                }
            }
            Arc::new(b.finish())
        }
        PrimitiveType::Binary => {
            let mut b = LargeBinaryBuilder::new();
            for cell in cells {
                match cell {
                    Cell::Null => b.append_null(),
                    Cell::Bytes(v) => b.append_value(v),
                    other => return Err(bad(other)),
                }
            }
            Arc::new(b.finish())
        }
        other => {
            return Err(Error::Unsupported(format!(
                "column {name}: type {other} is not supported"
            )));
        }
    })
}

/// An Arrow list column (its element `element`, of Iceberg type `kind`)
/// holding `cells`: NULL for [`Cell::Null`], the elements of a
/// [`Cell::List`] as [`column`] reads them.
fn list_column(
    name: &str,
    kind: &PrimitiveType,
    element: FieldRef,
    cells: &[&Cell],
    bad: &dyn Fn(&Cell) -> Error,
) -> Result<ArrayRef> {
    let mut items: Vec<&Cell> = Vec::new();
    let mut lengths = Vec::with_capacity(cells.len());
    let mut valid = Vec::with_capacity(cells.len());
    for cell in cells {
        match cell {
            Cell::Null => {
                lengths.push(0);
                valid.push(false);
            }
            Cell::List(elements) => {
                items.extend(elements);
                lengths.push(elements.len());
                valid.push(true);
            }
            other => return Err(bad(other)),
        }
    }
    let values = column(name, kind, &items, bad)?;
    let list = ListArray::try_new(
        element,
        arrow_buffer::OffsetBuffer::from_lengths(lengths),
        values,
        Some(valid.into()),
    )
    .map_err(Error::arrow(format!("column {name}")))?;
    Ok(Arc::new(list))
}

/// A primitive Arrow column: NULL for [`Cell::Null`], `value(cell)` for
/// the others (`None`: the column cannot hold it, an error).
fn primitive<T: ArrowPrimitiveType>(
    cells: &[&Cell],
    bad: &dyn Fn(&Cell) -> Error,
    value: impl Fn(&Cell) -> Option<T::Native>,
) -> Result<PrimitiveArray<T>> {
    let mut b = PrimitiveBuilder::<T>::with_capacity(cells.len());
    for cell in cells {
        match cell {
            Cell::Null => b.append_null(),
            other => b.append_value(value(other).ok_or_else(|| bad(other))?),
        }
    }
    Ok(b.finish())
}

/// `12.30` at `scale` 2 -> 1230; `None` if it has more fraction digits than
/// `scale` or more digits than `precision`.
fn unscaled(text: &str, precision: u32, scale: u32) -> Option<i128> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (int_part, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if frac.len() > scale as usize
        || !int_part
            .chars()
            .chain(frac.chars())
            .all(|c| c.is_ascii_digit())
        || int_part.is_empty() && frac.is_empty()
    {
        return None;
    }
    let padded = format!("{int_part}{frac:0<width$}", width = scale as usize);
    let significant = padded.trim_start_matches('0');
    if significant.len() > precision as usize {
        return None;
    }
    let value: i128 = if significant.is_empty() {
        0
    } else {
        significant.parse().ok()?
    };
    Some(if negative { -value } else { value })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Array as _;

    #[test]
    fn decimals_keep_their_scale_and_refuse_what_does_not_fit() {
        assert_eq!(unscaled("12.30", 10, 2), Some(1230));
        assert_eq!(unscaled("12.3", 10, 2), Some(1230));
        assert_eq!(unscaled("-0.05", 10, 2), Some(-5));
        assert_eq!(unscaled("7", 10, 2), Some(700));
        assert_eq!(
            unscaled("1.234", 10, 2),
            None,
            "more fraction digits than the scale"
        );
        assert_eq!(
            unscaled("123456789.00", 10, 2),
            None,
            "11 digits in numeric(10,2)"
        );
        assert_eq!(unscaled("12a", 10, 2), None);
    }

    #[test]
    fn vocabulary_tables_map_to_iceberg_with_keys_required() {
        let orders = &lossproof_vocabulary::workloads::orders().tables[1];
        let schema = iceberg_schema(orders).unwrap();
        let amount = schema.field_by_name("amount").unwrap();
        assert_eq!(
            *amount.field_type,
            Type::Primitive(PrimitiveType::Decimal {
                precision: 10,
                scale: 2
            })
        );
        assert!(schema.field_by_name("order_id").unwrap().required);
        assert!(!amount.required);
        assert_eq!(schema.identifier_field_ids().collect::<Vec<_>>(), [1]);
        let error = primitive_type(&ColumnType::Numeric(None)).unwrap_err();
        assert!(matches!(error, Error::Unsupported(_)), "{error:?}");
        assert!(error.to_string().contains("numeric"));
    }

    /// An array column is an Iceberg list whose element id follows the
    /// columns', and a list cell becomes an Arrow list: NULL, empty and
    /// NULL elements kept apart.
    #[test]
    fn array_columns_become_lists() {
        use arrow_array::cast::AsArray as _;
        let column = |name: &str, sql_type: &str| lossproof_lang::vocabulary::ColumnSig {
            name: name.into(),
            sql_type: ColumnType::parse(sql_type).unwrap(),
            not_null: false,
            large: false,
        };
        let table = TableSig {
            name: "t".into(),
            primary_key: vec!["id".into()],
            columns: vec![
                column("id", "bigint"),
                column("tags", "text[]"),
                column("cents", "numeric(8,2)[]"),
            ],
            foreign_keys: vec![],
            replica_identity: None,
        };
        let schema = iceberg_schema(&table).unwrap();
        let Type::List(cents) = schema.field_by_name("cents").unwrap().field_type.as_ref() else {
            panic!("{schema:?}")
        };
        assert_eq!(
            cents.element_field.id, 5,
            "after the 3 columns and tags' element"
        );
        assert!(!cents.element_field.required);
        assert_eq!(
            debezium_type_name(&schema.field_by_name("cents").unwrap().field_type),
            "array<decimal(8,2)>"
        );
        let rows: Vec<Row> = [
            Cell::List(vec![Cell::Text("a".into()), Cell::Null]),
            Cell::List(vec![]),
            Cell::Null,
        ]
        .into_iter()
        .enumerate()
        .map(|(i, tags)| {
            [
                ("id".to_owned(), Cell::Int(i64::try_from(i).unwrap())),
                ("tags".to_owned(), tags),
                (
                    "cents".to_owned(),
                    Cell::List(vec![Cell::Decimal("1.50".into())]),
                ),
            ]
            .into()
        })
        .collect();
        let batch = to_arrow(&schema, &rows.iter().collect::<Vec<_>>()).unwrap();
        let tags = batch.column(1).as_list::<i32>();
        assert_eq!(tags.value_offsets(), [0, 2, 2, 2]);
        assert!(tags.is_null(2) && !tags.is_null(1));
        assert!(tags.value(0).is_null(1));
        let cents = batch.column(2).as_list::<i32>().value(0);
        assert_eq!(
            cents.as_primitive::<Decimal128Type>().value_as_string(0),
            "1.50"
        );
        let wrong: Row = [("tags".to_owned(), Cell::Text("a".into()))].into();
        assert!(to_arrow(&schema, &[&wrong]).is_err(), "text is not a list");
    }

    #[test]
    fn rows_become_arrow_exactly() {
        let orders = &lossproof_vocabulary::workloads::orders().tables[1];
        let schema = iceberg_schema(orders).unwrap();
        let row: Row = [
            ("order_id".to_owned(), Cell::Int(7)),
            ("amount".to_owned(), Cell::Decimal("12.30".into())),
            ("note".to_owned(), Cell::Text(String::new())),
            (
                "created_at".to_owned(),
                Cell::Text("2026-11-30T03:51:11.123456Z".into()),
            ),
        ]
        .into();
        let batch = to_arrow(&schema, &[&row]).unwrap();
        assert_eq!(batch.num_rows(), 1);
        let amount = batch.column_by_name("amount").unwrap();
        let amount = amount
            .as_any()
            .downcast_ref::<arrow_array::Decimal128Array>()
            .unwrap();
        assert_eq!(amount.value_as_string(0), "12.30");
        let note = batch.column_by_name("note").unwrap();
        assert!(note.is_valid(0), "'' is a value, not NULL");
        assert!(batch.column_by_name("status").unwrap().is_null(0));
        let created = batch.column_by_name("created_at").unwrap();
        let created = created
            .as_any()
            .downcast_ref::<arrow_array::TimestampMicrosecondArray>()
            .unwrap();
        assert_eq!(created.value(0), 1_796_010_671_123_456);

        let wide: Row = [
            ("order_id".to_owned(), Cell::Int(8)),
            ("amount".to_owned(), Cell::Decimal("123456789.00".into())),
        ]
        .into();
        let error = to_arrow(&schema, &[&wide]).unwrap_err();
        assert!(matches!(error, Error::Value(_)), "{error:?}");
        assert!(error.to_string().contains("amount"));
    }
}
