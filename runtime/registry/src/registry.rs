//! The registry: subjects, versions and global ids, with Confluent's rules
//! for registration, lookup, deletion and configuration. Every change is
//! written to the state directory before it is acknowledged.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};

use serde::Serialize;

use crate::compatibility::Previous;
use crate::state::{State, SubjectState, VersionEntry};
use crate::store::Store;
use crate::{AvroSchema, CompatibilityLevel, RegistryError, VersionId};

/// One version of a subject, as `GET /subjects/{s}/versions/{v}` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SubjectVersion {
    pub subject: String,
    pub version: u32,
    pub id: u32,
    pub schema: String,
}

/// A (subject, version) pair that uses a schema id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SubjectVersionRef {
    pub subject: String,
    pub version: u32,
}

/// An embedded schema registry backed by a state directory.
#[derive(Debug)]
pub struct Registry {
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    store: Store,
    state: State,
    /// Every schema in `state.schemas`, parsed.
    parsed: HashMap<u32, AvroSchema>,
    /// Identity (normalized form) -> id, for reusing ids across subjects.
    by_identity: HashMap<String, u32>,
}

impl Registry {
    /// Open (or create) the registry stored in `dir`. Only one registry may
    /// have a directory open at a time.
    pub fn open(dir: impl AsRef<Path>) -> Result<Self, RegistryError> {
        let (store, state) = Store::open(dir.as_ref())?;
        let mut parsed = HashMap::with_capacity(state.schemas.len());
        let mut by_identity = HashMap::with_capacity(state.schemas.len());
        for (&id, text) in &state.schemas {
            let schema = AvroSchema::parse(text).map_err(|e| RegistryError::CorruptState {
                path: dir.as_ref().to_path_buf(),
                message: format!("schema {id}: {e}"),
            })?;
            by_identity
                .entry(schema.identity().to_owned())
                .or_insert(id);
            parsed.insert(id, schema);
        }
        Ok(Self {
            inner: Mutex::new(Inner {
                store,
                state,
                parsed,
                by_identity,
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave `state` half-changed:
        // changes are built on a copy and swapped in after they are saved.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Register `text` under `subject` and return its global id.
    ///
    /// The same schema (same identity) already live in the subject returns its
    /// id without a check; otherwise the schema must pass the subject's
    /// compatibility level against the subject's live versions, then becomes
    /// the next version, reusing the id of the same schema in any subject.
    pub fn register(&self, subject: &str, text: &str) -> Result<u32, RegistryError> {
        let schema = AvroSchema::parse(text)?;
        let mut inner = self.lock();
        if let Some(existing) = inner.find_in_subject(subject, &schema, false) {
            return Ok(existing.id);
        }
        let level = inner.level_for(subject);
        let messages = level.check(&schema, &inner.previous(subject));
        if !messages.is_empty() {
            return Err(RegistryError::Incompatible {
                subject: subject.to_owned(),
                level,
                messages,
            });
        }
        let mut next = inner.state.clone();
        let known = inner.by_identity.get(schema.identity()).copied();
        let id = known.unwrap_or(next.next_id);
        if known.is_none() {
            next.schemas.insert(id, text.to_owned());
            next.next_id += 1;
        }
        let entry = next.subjects.entry(subject.to_owned()).or_default();
        let version = entry.next_version();
        entry.versions.push(VersionEntry {
            version,
            id,
            deleted: false,
        });
        inner.commit(next)?;
        if known.is_none() {
            inner.by_identity.insert(schema.identity().to_owned(), id);
            inner.parsed.insert(id, schema);
        }
        Ok(id)
    }

    /// The version of `subject` holding the same schema as `text`
    /// (`POST /subjects/{subject}`).
    pub fn lookup(
        &self,
        subject: &str,
        text: &str,
        include_deleted: bool,
    ) -> Result<SubjectVersion, RegistryError> {
        let schema = AvroSchema::parse(text)?;
        let inner = self.lock();
        inner.subject(subject, include_deleted)?;
        let entry = inner
            .find_in_subject(subject, &schema, include_deleted)
            .ok_or(RegistryError::SchemaNotFound)?;
        Ok(inner.subject_version(subject, entry))
    }

    /// The schema text with global id `id`.
    pub fn schema_by_id(&self, id: u32) -> Result<String, RegistryError> {
        self.lock()
            .state
            .schemas
            .get(&id)
            .cloned()
            .ok_or(RegistryError::SchemaIdNotFound(id))
    }

    /// The highest id handed out so far (0 before the first registration).
    pub fn max_id(&self) -> u32 {
        self.lock().state.next_id - 1
    }

    /// Every (subject, version) that uses id `id`.
    pub fn versions_of_id(
        &self,
        id: u32,
        include_deleted: bool,
    ) -> Result<Vec<SubjectVersionRef>, RegistryError> {
        let inner = self.lock();
        if !inner.state.schemas.contains_key(&id) {
            return Err(RegistryError::SchemaIdNotFound(id));
        }
        Ok(inner
            .state
            .subjects
            .iter()
            .flat_map(|(subject, state)| {
                state
                    .versions
                    .iter()
                    .filter(move |v| v.id == id && (include_deleted || !v.deleted))
                    .map(move |v| SubjectVersionRef {
                        subject: subject.clone(),
                        version: v.version,
                    })
            })
            .collect())
    }

    /// Every subject with a live version (or any version, with
    /// `include_deleted`) whose name starts with `prefix`, sorted.
    pub fn subjects(&self, include_deleted: bool, prefix: &str) -> Vec<String> {
        self.lock()
            .state
            .subjects
            .iter()
            .filter(|(name, state)| {
                name.starts_with(prefix)
                    && if include_deleted {
                        !state.versions.is_empty()
                    } else {
                        state.is_live()
                    }
            })
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// The version numbers of `subject`, oldest first.
    pub fn versions(
        &self,
        subject: &str,
        include_deleted: bool,
    ) -> Result<Vec<u32>, RegistryError> {
        let inner = self.lock();
        let state = inner.subject(subject, include_deleted)?;
        Ok(state
            .versions
            .iter()
            .filter(|v| include_deleted || !v.deleted)
            .map(|v| v.version)
            .collect())
    }

    /// One version of `subject`.
    pub fn version(
        &self,
        subject: &str,
        version: VersionId,
        include_deleted: bool,
    ) -> Result<SubjectVersion, RegistryError> {
        let inner = self.lock();
        let state = inner.subject(subject, include_deleted)?;
        let entry = find_version(state, version, include_deleted)?;
        Ok(inner.subject_version(subject, entry))
    }

    /// Delete `subject`: soft (hide every live version), or permanent (forget
    /// a subject soft-deleted before). Returns the versions deleted.
    pub fn delete_subject(
        &self,
        subject: &str,
        permanent: bool,
    ) -> Result<Vec<u32>, RegistryError> {
        let mut inner = self.lock();
        let state = inner.subject(subject, true)?;
        let mut next = inner.state.clone();
        let deleted = if permanent {
            if state.is_live() {
                return Err(RegistryError::SubjectNotSoftDeleted(subject.to_owned()));
            }
            let removed = next.subjects.remove(subject).unwrap_or_default();
            drop_unused_schemas(&mut next);
            removed.versions.iter().map(|v| v.version).collect()
        } else {
            if !state.is_live() {
                return Err(RegistryError::SubjectSoftDeleted(subject.to_owned()));
            }
            let mut deleted = Vec::new();
            if let Some(entry) = next.subjects.get_mut(subject) {
                for v in entry.versions.iter_mut().filter(|v| !v.deleted) {
                    v.deleted = true;
                    deleted.push(v.version);
                }
            }
            deleted
        };
        inner.commit(next)?;
        Ok(deleted)
    }

    /// Delete one version of `subject`: soft, or permanent (after a soft
    /// delete). Returns the version number deleted.
    pub fn delete_version(
        &self,
        subject: &str,
        version: VersionId,
        permanent: bool,
    ) -> Result<u32, RegistryError> {
        let mut inner = self.lock();
        let state = inner.subject(subject, true)?;
        // `latest` is the newest live version for a soft delete; a number may
        // name a soft-deleted one (an error unless `permanent`).
        let entry = *find_version(state, version, permanent || version != VersionId::Latest)?;
        if entry.deleted != permanent {
            let (subject, version) = (subject.to_owned(), entry.version);
            return Err(if permanent {
                RegistryError::VersionNotSoftDeleted { subject, version }
            } else {
                RegistryError::VersionSoftDeleted { subject, version }
            });
        }
        let mut next = inner.state.clone();
        let Some(SubjectState { versions, .. }) = next.subjects.get_mut(subject) else {
            return Err(RegistryError::SubjectNotFound(subject.to_owned()));
        };
        if permanent {
            versions.retain(|v| v.version != entry.version);
            if versions.is_empty()
                && next
                    .subjects
                    .get(subject)
                    .is_some_and(|s| s.compatibility.is_none())
            {
                next.subjects.remove(subject);
            }
            drop_unused_schemas(&mut next);
        } else {
            versions
                .iter_mut()
                .filter(|v| v.version == entry.version)
                .for_each(|v| v.deleted = true);
        }
        inner.commit(next)?;
        Ok(entry.version)
    }

    /// Whether `text` could be registered under `subject`: checked against
    /// the subject's live versions as a registration would be (`version`
    /// `None`), or against one version only in the level's direction(s).
    /// Returns the problems; empty means compatible.
    pub fn test_compatibility(
        &self,
        subject: &str,
        version: Option<VersionId>,
        text: &str,
    ) -> Result<Vec<String>, RegistryError> {
        let schema = AvroSchema::parse(text)?;
        let inner = self.lock();
        let level = inner.level_for(subject);
        let Some(version) = version else {
            return Ok(level.check(&schema, &inner.previous(subject)));
        };
        let state = match inner.subject(subject, false) {
            Ok(state) => state,
            // Nothing registered yet: anything may become the first version.
            Err(RegistryError::SubjectNotFound(_)) if version == VersionId::Latest => {
                return Ok(Vec::new());
            }
            Err(e) => return Err(e),
        };
        let entry = find_version(state, version, false)?;
        Ok(level.check_one(
            &schema,
            Previous {
                version: entry.version,
                schema: &inner.parsed[&entry.id],
            },
        ))
    }

    /// The global compatibility level.
    pub fn global_compatibility(&self) -> CompatibilityLevel {
        self.lock().state.compatibility
    }

    /// Set the global compatibility level.
    pub fn set_global_compatibility(&self, level: CompatibilityLevel) -> Result<(), RegistryError> {
        let mut inner = self.lock();
        let mut next = inner.state.clone();
        next.compatibility = level;
        inner.commit(next)
    }

    /// The level set on `subject` itself, if any.
    pub fn subject_compatibility(&self, subject: &str) -> Option<CompatibilityLevel> {
        self.lock()
            .state
            .subjects
            .get(subject)
            .and_then(|s| s.compatibility)
    }

    /// Set `subject`'s own level (the subject need not exist yet).
    pub fn set_subject_compatibility(
        &self,
        subject: &str,
        level: CompatibilityLevel,
    ) -> Result<(), RegistryError> {
        let mut inner = self.lock();
        let mut next = inner.state.clone();
        next.subjects
            .entry(subject.to_owned())
            .or_default()
            .compatibility = Some(level);
        inner.commit(next)
    }

    /// Remove `subject`'s own level (it falls back to the global one);
    /// returns the level it had.
    pub fn delete_subject_compatibility(
        &self,
        subject: &str,
    ) -> Result<CompatibilityLevel, RegistryError> {
        let mut inner = self.lock();
        let mut next = inner.state.clone();
        let level = next
            .subjects
            .get_mut(subject)
            .and_then(|s| s.compatibility.take())
            .ok_or_else(|| RegistryError::SubjectCompatibilityNotConfigured(subject.to_owned()))?;
        if next
            .subjects
            .get(subject)
            .is_some_and(|s| s.versions.is_empty())
        {
            next.subjects.remove(subject);
        }
        inner.commit(next)?;
        Ok(level)
    }
}

impl Inner {
    /// Save `next` and make it the current state.
    fn commit(&mut self, next: State) -> Result<(), RegistryError> {
        self.store.save(&next)?;
        self.state = next;
        let schemas = &self.state.schemas;
        self.parsed.retain(|id, _| schemas.contains_key(id));
        self.by_identity.retain(|_, id| schemas.contains_key(id));
        Ok(())
    }

    fn level_for(&self, subject: &str) -> CompatibilityLevel {
        self.state
            .subjects
            .get(subject)
            .and_then(|s| s.compatibility)
            .unwrap_or(self.state.compatibility)
    }

    /// A subject that has a live version (or any version, with
    /// `include_deleted`).
    fn subject(
        &self,
        subject: &str,
        include_deleted: bool,
    ) -> Result<&SubjectState, RegistryError> {
        self.state
            .subjects
            .get(subject)
            .filter(|s| {
                if include_deleted {
                    !s.versions.is_empty()
                } else {
                    s.is_live()
                }
            })
            .ok_or_else(|| RegistryError::SubjectNotFound(subject.to_owned()))
    }

    /// The subject's live versions, oldest first, for a compatibility check.
    fn previous(&self, subject: &str) -> Vec<Previous<'_>> {
        self.state
            .subjects
            .get(subject)
            .map(|s| {
                s.live()
                    .map(|v| Previous {
                        version: v.version,
                        schema: &self.parsed[&v.id],
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The newest version of `subject` holding the same schema as `schema`.
    fn find_in_subject(
        &self,
        subject: &str,
        schema: &AvroSchema,
        include_deleted: bool,
    ) -> Option<&VersionEntry> {
        self.state
            .subjects
            .get(subject)?
            .versions
            .iter()
            .rev()
            .find(|v| {
                (include_deleted || !v.deleted)
                    && self.parsed[&v.id].identity() == schema.identity()
            })
    }

    fn subject_version(&self, subject: &str, entry: &VersionEntry) -> SubjectVersion {
        SubjectVersion {
            subject: subject.to_owned(),
            version: entry.version,
            id: entry.id,
            schema: self.state.schemas[&entry.id].clone(),
        }
    }
}

fn find_version(
    state: &SubjectState,
    version: VersionId,
    include_deleted: bool,
) -> Result<&VersionEntry, RegistryError> {
    let mut visible = state
        .versions
        .iter()
        .filter(|v| include_deleted || !v.deleted);
    match version {
        VersionId::Latest => visible.next_back(),
        VersionId::Number(n) => visible.find(|v| v.version == n),
    }
    .ok_or_else(|| RegistryError::VersionNotFound {
        version: version.to_string(),
    })
}

/// Forget schemas no version (live or soft-deleted) uses any more. Their ids
/// are not handed out again.
fn drop_unused_schemas(state: &mut State) {
    let used: std::collections::HashSet<u32> = state
        .subjects
        .values()
        .flat_map(|s| s.versions.iter().map(|v| v.id))
        .collect();
    state.schemas.retain(|id, _| used.contains(id));
}

#[cfg(test)]
mod tests {
    use super::*;

    const V1: &str = r#"{"type":"record","name":"Customer","fields":[{"name":"id","type":"int"}]}"#;
    const V2: &str = r#"{"type":"record","name":"Customer","fields":[{"name":"id","type":"int"},{"name":"name","type":["null","string"],"default":null}]}"#;
    const V2_SPACED: &str = r#"{
        "type": "record",
        "name": "Customer",
        "fields": [
            {"name": "id", "type": "int"},
            {"default": null, "name": "name", "type": ["null", "string"]}
        ]
    }"#;
    const NOT_BACKWARD: &str =
        r#"{"type":"record","name":"Customer","fields":[{"name":"id","type":"string"}]}"#;

    fn open() -> (tempfile::TempDir, Registry) {
        let dir = tempfile::tempdir().unwrap();
        let registry = Registry::open(dir.path()).unwrap();
        (dir, registry)
    }

    #[test]
    fn registering_assigns_ids_and_versions() {
        let (_dir, registry) = open();
        assert_eq!(registry.register("a-value", V1).unwrap(), 1);
        assert_eq!(registry.register("a-value", V2).unwrap(), 2);
        assert_eq!(registry.versions("a-value", false).unwrap(), vec![1, 2]);
        let latest = registry
            .version("a-value", VersionId::Latest, false)
            .unwrap();
        assert_eq!((latest.version, latest.id), (2, 2));
        assert_eq!(latest.schema, V2);
        assert_eq!(registry.schema_by_id(1).unwrap(), V1);
        assert_eq!(registry.max_id(), 2);
    }

    #[test]
    fn the_same_schema_keeps_its_id_whatever_its_whitespace_or_subject() {
        let (_dir, registry) = open();
        let id = registry.register("a-value", V2).unwrap();
        // Same subject, same canonical form: no new version.
        assert_eq!(registry.register("a-value", V2_SPACED).unwrap(), id);
        assert_eq!(registry.versions("a-value", false).unwrap(), vec![1]);
        // Another subject: same global id, its own version 1.
        assert_eq!(registry.register("b-value", V2_SPACED).unwrap(), id);
        assert_eq!(
            registry.versions_of_id(id, false).unwrap(),
            vec![
                SubjectVersionRef {
                    subject: "a-value".into(),
                    version: 1
                },
                SubjectVersionRef {
                    subject: "b-value".into(),
                    version: 1
                },
            ]
        );
        // The text first registered is what clients get back.
        assert_eq!(registry.schema_by_id(id).unwrap(), V2);
        let found = registry.lookup("b-value", V2_SPACED, false).unwrap();
        assert_eq!((found.id, found.version), (id, 1));
    }

    #[test]
    fn an_old_version_registered_again_returns_its_id_without_a_check() {
        let (_dir, registry) = open();
        let v1 = registry.register("s", V1).unwrap();
        registry.register("s", V2).unwrap();
        assert_eq!(registry.register("s", V1).unwrap(), v1);
        assert_eq!(registry.versions("s", false).unwrap(), vec![1, 2]);
    }

    #[test]
    fn an_incompatible_schema_is_refused_and_changes_nothing() {
        let (dir, registry) = open();
        registry.register("s", V1).unwrap();
        let error = registry.register("s", NOT_BACKWARD).unwrap_err();
        assert!(
            matches!(error, RegistryError::Incompatible { .. }),
            "{error}"
        );
        assert_eq!(error.error_code(), 409);
        assert_eq!(registry.versions("s", false).unwrap(), vec![1]);
        assert_eq!(registry.max_id(), 1);
        // Under NONE the same change goes through.
        registry
            .set_subject_compatibility("s", CompatibilityLevel::None)
            .unwrap();
        assert_eq!(registry.register("s", NOT_BACKWARD).unwrap(), 2);
        // The subject level wins over the global one and both persist.
        registry
            .set_global_compatibility(CompatibilityLevel::Full)
            .unwrap();
        drop(registry);
        let registry = Registry::open(dir.path()).unwrap();
        assert_eq!(
            registry.subject_compatibility("s"),
            Some(CompatibilityLevel::None)
        );
        assert_eq!(registry.global_compatibility(), CompatibilityLevel::Full);
    }

    #[test]
    fn reopening_keeps_every_subject_version_and_id() {
        let (dir, registry) = open();
        registry.register("a-value", V1).unwrap();
        registry.register("a-value", V2).unwrap();
        registry.register("b-value", V1).unwrap();
        registry.delete_subject("b-value", false).unwrap();
        let before: Vec<SubjectVersion> = [1, 2]
            .map(|v| {
                registry
                    .version("a-value", VersionId::Number(v), false)
                    .unwrap()
            })
            .to_vec();
        drop(registry);

        let registry = Registry::open(dir.path()).unwrap();
        let after: Vec<SubjectVersion> = [1, 2]
            .map(|v| {
                registry
                    .version("a-value", VersionId::Number(v), false)
                    .unwrap()
            })
            .to_vec();
        assert_eq!(before, after);
        assert_eq!(registry.subjects(false, ""), vec!["a-value"]);
        assert_eq!(registry.subjects(true, ""), vec!["a-value", "b-value"]);
        // The id index is rebuilt: the same schema still maps to its id...
        assert_eq!(registry.register("c-value", V2_SPACED).unwrap(), 2);
        // ...and a new one gets the next id, not a reused one.
        let v3 = r#"{"type":"record","name":"Customer","fields":[{"name":"id","type":"int"},{"name":"age","type":"int","default":0}]}"#;
        assert_eq!(registry.register("a-value", v3).unwrap(), 3);
    }

    #[test]
    fn soft_and_permanent_deletes_follow_confluent() {
        let (_dir, registry) = open();
        registry.register("s", V1).unwrap();
        registry.register("s", V2).unwrap();
        assert!(matches!(
            registry.delete_subject("s", true),
            Err(RegistryError::SubjectNotSoftDeleted(_))
        ));
        assert_eq!(registry.delete_subject("s", false).unwrap(), vec![1, 2]);
        assert!(matches!(
            registry.versions("s", false),
            Err(RegistryError::SubjectNotFound(_))
        ));
        assert!(matches!(
            registry.delete_subject("s", false),
            Err(RegistryError::SubjectSoftDeleted(_))
        ));
        // Soft-deleted versions stay readable by id and with deleted=true.
        assert_eq!(registry.schema_by_id(1).unwrap(), V1);
        assert_eq!(registry.versions("s", true).unwrap(), vec![1, 2]);
        // A deleted subject checks nothing: an unrelated schema is accepted,
        // numbered after the deleted versions, and keeps its id.
        assert_eq!(registry.register("s", NOT_BACKWARD).unwrap(), 3);
        assert_eq!(registry.versions("s", false).unwrap(), vec![3]);
        registry.delete_subject("s", false).unwrap();
        assert_eq!(registry.delete_subject("s", true).unwrap(), vec![1, 2, 3]);
        assert!(matches!(
            registry.schema_by_id(1),
            Err(RegistryError::SchemaIdNotFound(1))
        ));
        // Ids are never handed out twice.
        assert_eq!(registry.register("s", V1).unwrap(), 4);
    }

    #[test]
    fn deleting_one_version() {
        let (_dir, registry) = open();
        registry.register("s", V1).unwrap();
        registry.register("s", V2).unwrap();
        assert_eq!(
            registry
                .delete_version("s", VersionId::Latest, false)
                .unwrap(),
            2
        );
        assert_eq!(
            registry
                .version("s", VersionId::Latest, false)
                .unwrap()
                .version,
            1
        );
        assert!(matches!(
            registry.version("s", VersionId::Number(2), false),
            Err(RegistryError::VersionNotFound { .. })
        ));
        assert!(matches!(
            registry.delete_version("s", VersionId::Number(1), true),
            Err(RegistryError::VersionNotSoftDeleted { .. })
        ));
        assert!(matches!(
            registry.delete_version("s", VersionId::Number(2), false),
            Err(RegistryError::VersionSoftDeleted { .. })
        ));
        assert_eq!(
            registry
                .delete_version("s", VersionId::Number(2), true)
                .unwrap(),
            2
        );
        assert!(matches!(
            registry.schema_by_id(2),
            Err(RegistryError::SchemaIdNotFound(2))
        ));
    }

    #[test]
    fn lookups_and_missing_things_answer_confluent_errors() {
        let (_dir, registry) = open();
        registry.register("s", V1).unwrap();
        assert!(matches!(
            registry.lookup("s", V2, false),
            Err(RegistryError::SchemaNotFound)
        ));
        assert!(matches!(
            registry.lookup("t", V1, false),
            Err(RegistryError::SubjectNotFound(_))
        ));
        assert!(matches!(
            registry.version("s", VersionId::Number(9), false),
            Err(RegistryError::VersionNotFound { .. })
        ));
        assert!(matches!(
            registry.schema_by_id(9),
            Err(RegistryError::SchemaIdNotFound(9))
        ));
        assert!(matches!(
            registry.register("s", "{\"type\":"),
            Err(RegistryError::InvalidSchema(_))
        ));
        assert!(matches!(
            registry.delete_subject_compatibility("s"),
            Err(RegistryError::SubjectCompatibilityNotConfigured(_))
        ));
    }

    #[test]
    fn compatibility_tests_do_not_register() {
        let (_dir, registry) = open();
        // Nothing registered: compatible.
        assert!(
            registry
                .test_compatibility("s", Some(VersionId::Latest), V1)
                .unwrap()
                .is_empty()
        );
        registry.register("s", V1).unwrap();
        assert!(
            registry
                .test_compatibility("s", Some(VersionId::Latest), V2)
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            registry
                .test_compatibility("s", None, NOT_BACKWARD)
                .unwrap()
                .len(),
            1
        );
        assert_eq!(
            registry
                .test_compatibility("s", Some(VersionId::Number(1)), NOT_BACKWARD)
                .unwrap()
                .len(),
            1
        );
        assert!(matches!(
            registry.test_compatibility("s", Some(VersionId::Number(2)), V2),
            Err(RegistryError::VersionNotFound { .. })
        ));
        assert_eq!(registry.versions("s", false).unwrap(), vec![1]);
    }
}
