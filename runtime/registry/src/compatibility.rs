//! Compatibility levels and the check each one makes.

use std::fmt;
use std::str::FromStr;

use apache_avro::schema_compatibility::{Compatibility, SchemaCompatibility};
use serde::{Deserialize, Serialize};

use crate::{AvroSchema, RegistryError};

/// A Confluent compatibility level: which earlier versions a new schema is
/// checked against, and in which direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CompatibilityLevel {
    /// No check.
    None,
    /// The new schema can read data written with the latest version.
    #[default]
    Backward,
    /// The new schema can read data written with every version.
    BackwardTransitive,
    /// The latest version can read data written with the new schema.
    Forward,
    /// Every version can read data written with the new schema.
    ForwardTransitive,
    /// Backward and forward against the latest version.
    Full,
    /// Backward and forward against every version.
    FullTransitive,
}

/// A registered version the new schema is compared with.
#[derive(Debug, Clone, Copy)]
pub struct Previous<'a> {
    pub version: u32,
    pub schema: &'a AvroSchema,
}

impl CompatibilityLevel {
    pub const ALL: [Self; 7] = [
        Self::None,
        Self::Backward,
        Self::BackwardTransitive,
        Self::Forward,
        Self::ForwardTransitive,
        Self::Full,
        Self::FullTransitive,
    ];

    /// The name Confluent uses (`BACKWARD_TRANSITIVE`, …).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "NONE",
            Self::Backward => "BACKWARD",
            Self::BackwardTransitive => "BACKWARD_TRANSITIVE",
            Self::Forward => "FORWARD",
            Self::ForwardTransitive => "FORWARD_TRANSITIVE",
            Self::Full => "FULL",
            Self::FullTransitive => "FULL_TRANSITIVE",
        }
    }

    fn transitive(self) -> bool {
        matches!(
            self,
            Self::BackwardTransitive | Self::ForwardTransitive | Self::FullTransitive
        )
    }

    fn backward(self) -> bool {
        matches!(
            self,
            Self::Backward | Self::BackwardTransitive | Self::Full | Self::FullTransitive
        )
    }

    fn forward(self) -> bool {
        matches!(
            self,
            Self::Forward | Self::ForwardTransitive | Self::Full | Self::FullTransitive
        )
    }

    /// Check `new` against a subject's live versions (oldest first) as a
    /// registration does: against the latest one, or every one if this level
    /// is transitive. Returns one message per problem; empty means compatible.
    #[must_use]
    pub fn check(self, new: &AvroSchema, previous: &[Previous<'_>]) -> Vec<String> {
        let against = if self.transitive() {
            previous
        } else {
            previous.last().map_or(&[][..], std::slice::from_ref)
        };
        against
            .iter()
            .rev()
            .flat_map(|old| self.check_one(new, *old))
            .collect()
    }

    /// Check `new` against one version only, in this level's direction(s).
    #[must_use]
    pub fn check_one(self, new: &AvroSchema, old: Previous<'_>) -> Vec<String> {
        let mut messages = Vec::new();
        if self.backward()
            && let Err(why) = reads(new, old.schema)
        {
            messages.push(format!(
                "the new schema cannot read data written with version {}: {why}",
                old.version
            ));
        }
        if self.forward()
            && let Err(why) = reads(old.schema, new)
        {
            messages.push(format!(
                "version {} cannot read data written with the new schema: {why}",
                old.version
            ));
        }
        messages
    }
}

/// Whether `reader` can read every datum written with `writer`.
///
/// `apache-avro` answers `Partial` when only some data can be read (a writer
/// union branch or enum symbol the reader lacks); Avro Java, and so
/// Confluent, calls that incompatible.
fn reads(reader: &AvroSchema, writer: &AvroSchema) -> Result<(), String> {
    match SchemaCompatibility::can_read(writer.resolved(), reader.resolved()) {
        Ok(Compatibility::Full) => Ok(()),
        Ok(Compatibility::Partial) => Err(
            "only part of the data can be read (a union branch or enum symbol of the writer is \
             missing from the reader)"
                .to_owned(),
        ),
        Err(error) => Err(error.to_string()),
    }
}

impl fmt::Display for CompatibilityLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for CompatibilityLevel {
    type Err = RegistryError;

    /// Parse a level name, in any case (Confluent accepts `backward` too).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|level| level.name().eq_ignore_ascii_case(text.trim()))
            .ok_or_else(|| RegistryError::InvalidCompatibilityLevel(text.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    const CUSTOMER_V1: &str =
        r#"{"type":"record","name":"Customer","fields":[{"name":"id","type":"int"}]}"#;

    fn schema(text: &str) -> AvroSchema {
        AvroSchema::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn verdict(level: CompatibilityLevel, new: &str, old: &[&str]) -> Vec<String> {
        let new = schema(new);
        let old: Vec<AvroSchema> = old.iter().map(|t| schema(t)).collect();
        let previous: Vec<Previous<'_>> = old
            .iter()
            .zip(1..)
            .map(|(schema, version)| Previous { version, schema })
            .collect();
        level.check(&new, &previous)
    }

    fn customer(extra_fields: &str) -> String {
        format!(
            r#"{{"type":"record","name":"Customer","fields":[{{"name":"id","type":"int"}}{extra_fields}]}}"#
        )
    }

    #[test]
    fn backward_accepts_a_field_added_with_a_default() {
        let new = customer(r#",{"name":"name","type":"string","default":""}"#);
        assert_eq!(
            verdict(CompatibilityLevel::Backward, &new, &[CUSTOMER_V1]),
            Vec::<String>::new()
        );
    }

    #[test]
    fn backward_rejects_a_field_added_without_a_default() {
        let new = customer(r#",{"name":"name","type":"string"}"#);
        let messages = verdict(CompatibilityLevel::Backward, &new, &[CUSTOMER_V1]);
        assert_eq!(messages.len(), 1, "{messages:?}");
        assert!(messages[0].contains("version 1"), "{messages:?}");
        assert!(messages[0].contains("name"), "{messages:?}");
    }

    #[test]
    fn backward_rejects_string_to_int() {
        let old = customer(r#",{"name":"name","type":"string"}"#);
        let new = customer(r#",{"name":"name","type":"int"}"#);
        assert_eq!(
            verdict(CompatibilityLevel::Backward, &new, &[&old]).len(),
            1
        );
        // ...which NONE lets through.
        assert!(verdict(CompatibilityLevel::None, &new, &[&old]).is_empty());
    }

    #[test]
    fn forward_is_the_other_direction() {
        let without_default = customer(r#",{"name":"name","type":"string"}"#);
        // Adding a field without a default: old readers ignore it.
        assert!(
            verdict(
                CompatibilityLevel::Forward,
                &without_default,
                &[CUSTOMER_V1]
            )
            .is_empty()
        );
        // Removing it: old readers need it and have no default.
        assert_eq!(
            verdict(
                CompatibilityLevel::Forward,
                CUSTOMER_V1,
                &[&without_default]
            )
            .len(),
            1
        );
    }

    #[test]
    fn full_needs_both_directions() {
        let with_default = customer(r#",{"name":"name","type":"string","default":""}"#);
        let without_default = customer(r#",{"name":"name","type":"string"}"#);
        assert!(verdict(CompatibilityLevel::Full, &with_default, &[CUSTOMER_V1]).is_empty());
        let messages = verdict(CompatibilityLevel::Full, &without_default, &[CUSTOMER_V1]);
        assert_eq!(messages.len(), 1, "{messages:?}");
        assert!(
            messages[0].starts_with("the new schema cannot read"),
            "{messages:?}"
        );
        let messages = verdict(CompatibilityLevel::Full, CUSTOMER_V1, &[&without_default]);
        assert_eq!(messages.len(), 1, "{messages:?}");
        assert!(
            messages[0].starts_with("version 1 cannot read"),
            "{messages:?}"
        );
    }

    #[test]
    fn transitive_levels_check_every_version() {
        let v2 = customer(r#",{"name":"name","type":"string","default":"x"}"#);
        let new = customer(r#",{"name":"name","type":"string"}"#);
        // Reads v2 data (name present) but not v1 data (no name, no default).
        assert!(verdict(CompatibilityLevel::Backward, &new, &[CUSTOMER_V1, &v2]).is_empty());
        let messages = verdict(
            CompatibilityLevel::BackwardTransitive,
            &new,
            &[CUSTOMER_V1, &v2],
        );
        assert_eq!(messages.len(), 1, "{messages:?}");
        assert!(messages[0].contains("version 1"), "{messages:?}");
        assert!(verdict(CompatibilityLevel::Full, &new, &[CUSTOMER_V1, &v2]).is_empty());
        assert_eq!(
            verdict(
                CompatibilityLevel::FullTransitive,
                &new,
                &[CUSTOMER_V1, &v2]
            )
            .len(),
            1
        );
    }

    #[test]
    fn levels_parse_in_any_case_and_print_as_confluent_names() {
        for level in CompatibilityLevel::ALL {
            assert_eq!(level.name().parse::<CompatibilityLevel>().unwrap(), level);
            assert_eq!(
                level
                    .name()
                    .to_lowercase()
                    .parse::<CompatibilityLevel>()
                    .unwrap(),
                level
            );
            assert_eq!(
                serde_json::to_string(&level).unwrap(),
                format!("\"{}\"", level.name())
            );
        }
        assert!(matches!(
            "SIDEWAYS".parse::<CompatibilityLevel>(),
            Err(RegistryError::InvalidCompatibilityLevel(_))
        ));
    }

    #[derive(Deserialize)]
    struct Case {
        name: String,
        level: CompatibilityLevel,
        new: String,
        old: Vec<String>,
        expected: String,
    }

    /// Every case in `testdata/compatibility.json`. Their expected verdicts are
    /// Confluent's own (`testdata/Oracle.java` runs them through
    /// `CompatibilityChecker` 7.0.16 and fails on any difference).
    #[test]
    fn agrees_with_confluent_on_every_recorded_case() {
        let cases: Vec<Case> =
            serde_json::from_str(include_str!("../testdata/compatibility.json")).unwrap();
        assert!(cases.len() > 50);
        let mut disagreements = Vec::new();
        for case in &cases {
            let actual = match AvroSchema::parse(&case.new) {
                Err(_) => "invalid".to_owned(),
                Ok(new) => {
                    let old: Vec<AvroSchema> = case.old.iter().map(|t| schema(t)).collect();
                    let previous: Vec<Previous<'_>> = old
                        .iter()
                        .zip(1..)
                        .map(|(schema, version)| Previous { version, schema })
                        .collect();
                    let messages = case.level.check(&new, &previous);
                    if messages.is_empty() {
                        "compatible".to_owned()
                    } else {
                        format!("incompatible ({})", messages.join("; "))
                    }
                }
            };
            if !actual.starts_with(&case.expected) {
                disagreements.push(format!(
                    "{}: expected {}, got {actual}",
                    case.name, case.expected
                ));
            }
        }
        assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
    }
}
