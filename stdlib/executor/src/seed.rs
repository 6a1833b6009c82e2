//! [`Seed`]: one seed of a run, built once — its identity, the stack's
//! endpoints, its connections, its workload — and what set-up starts for
//! it. Every step of the seed ([`crate::run`]) and every fault
//! ([`crate::fault`]) takes it; a fault gets what is particular to one
//! strike beside it ([`crate::fault::Strike`]).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock, Weak};

use lossproof_lang::Plan;
use lossproof_lang::vocabulary::WorkloadSig;
use lossproof_runtime::debezium::CaptureNames;
use lossproof_runtime::supervisor::Supervised;
use lossproof_runtime::{ConnectClient, Endpoints, Lake, Stack};

use crate::error::{Error, Result};
use crate::fault::maintenance::Races;
use crate::run::Options;

/// One seed under way.
pub struct Seed<'a> {
    /// The seed's number: everything random in it is drawn from this.
    pub number: u64,
    /// `<run id>s<seed>`: what every name of the seed carries.
    pub run: String,
    /// The connector, slot, publication, topics, groups and database of
    /// the seed, all named for `run`.
    pub names: CaptureNames,
    pub plan: &'a Plan,
    pub options: &'a Options,
    pub stack: &'a Stack,
    /// Where each component is (the local stack's ports, or a profile's).
    pub endpoints: Endpoints,
    /// What the seed captures and its consumers write: the plan's tables
    /// or the stdlib workload it names, then the freshness probe's table
    /// (`lossproof_vocabulary::workloads::with_probe`; never scored:
    /// [`Seed::scored_tables`]).
    pub workload: WorkloadSig,
    /// The seed's own source database.
    pub source: tokio_postgres::Client,
    pub connect: ConnectClient,
    /// The lake every consumer writes.
    pub lake: Lake,
    /// `<state>/runs/<run>`: the consumers' logs and messages, the
    /// compactor's record, a scenario's own tables.
    pub logs: PathBuf,
    /// The connector's configuration once set-up created it (what
    /// `recreate connector` puts back).
    pub connector: OnceLock<serde_json::Value>,
    /// What `preload N` wrote, once set-up did.
    pub preloaded: OnceLock<crate::workload::preload::Preloaded>,
    /// The consumers under test, by name, once set-up started them.
    pub consumers: tokio::sync::Mutex<BTreeMap<String, Supervised>>,
    /// The seed's compaction job, when the scenario names the `compactor`
    /// target.
    pub compactor: tokio::sync::Mutex<Option<Supervised>>,
    /// The maintenance commits' races, per consumer lake (into the record).
    pub races: std::sync::Mutex<BTreeMap<String, Races>>,
    /// What each fault occurrence produced (by its index in the timeline),
    /// and the threads of those still producing (`duplicate` copies until
    /// its phase ends): [`crate::fault::counts_into`] waits for them.
    pub counts: Arc<std::sync::Mutex<BTreeMap<usize, crate::run::FaultCounts>>>,
    pub producing: std::sync::Mutex<Vec<std::thread::JoinHandle<()>>>,
    /// Alive while the seed runs ([`Seed::alive`]), gone at [`Seed::end`].
    alive: std::sync::Mutex<Option<Arc<()>>>,
}

impl<'a> Seed<'a> {
    /// Seed `number` of `plan` on `stack`: the endpoints, the workload,
    /// the lake and the connections, then the seed's own source database
    /// (created here; the seed's clean-up drops it). Nothing is left
    /// behind when this fails.
    pub async fn open(
        stack: &'a Stack,
        plan: &'a Plan,
        options: &'a Options,
        number: u64,
    ) -> Result<Self> {
        let run = options.run_of(number);
        let endpoints = stack.endpoints()?;
        let workload = lossproof_vocabulary::workloads::with_probe(
            lossproof_vocabulary::workloads::of_plan(plan)?,
        );
        let lake = endpoints.open_lake().await?;
        let connect = ConnectClient::new(&endpoints.connect);
        // A database of the seed's own: seeds running at once (`--jobs`)
        // each have their tables, history and publication.
        let names = CaptureNames::for_run(&run).in_own_database();
        let logs = stack.state().root().join("runs").join(&run);
        std::fs::create_dir_all(&logs).map_err(Error::io(logs.display().to_string()))?;
        lossproof_runtime::postgres::ensure_database(&endpoints.source, &names.database).await?;
        let source = match endpoints.source.connect(&names.database).await {
            Ok(source) => source,
            Err(e) => {
                let _ =
                    lossproof_runtime::postgres::drop_database(&endpoints.source, &names.database)
                        .await;
                return Err(e.into());
            }
        };
        Ok(Self {
            number,
            run,
            names,
            plan,
            options,
            stack,
            endpoints,
            workload,
            source,
            connect,
            lake,
            logs,
            connector: OnceLock::new(),
            preloaded: OnceLock::new(),
            consumers: tokio::sync::Mutex::new(BTreeMap::new()),
            compactor: tokio::sync::Mutex::new(None),
            races: std::sync::Mutex::new(BTreeMap::new()),
            counts: Arc::default(),
            producing: std::sync::Mutex::new(Vec::new()),
            alive: std::sync::Mutex::new(Some(Arc::new(()))),
        })
    }

    /// Alive while the seed runs: a fault that keeps acting on a task or a
    /// thread of its own stops as soon as this is gone (the seed ended or
    /// was stopped).
    #[must_use]
    pub fn alive(&self) -> Weak<()> {
        self.alive
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_ref()
            .map_or_else(Weak::new, Arc::downgrade)
    }

    /// The seed's own activity ends, whatever state it is in: faults still
    /// acting on threads of their own stop ([`Seed::alive`] is gone), the
    /// compactor and the consumers are killed, all at once (a no-op for
    /// those already stopped). What they use can be removed after this.
    pub async fn end(&self) {
        self.alive
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(compactor) = self.compactor.lock().await.as_mut() {
            compactor.kill().await;
        }
        let mut consumers = self.consumers.lock().await;
        futures_util::future::join_all(consumers.values_mut().map(Supervised::kill)).await;
    }

    /// A consumer's log file in the seed's log folder.
    #[must_use]
    pub fn log_of(&self, consumer: &str) -> PathBuf {
        self.logs.join(format!("{consumer}.log"))
    }

    /// The file the seed's tables reach the reference consumers in
    /// (`tables.json` in the log folder): the workload's and the probe's.
    #[must_use]
    pub fn tables_file(&self) -> PathBuf {
        self.logs
            .join(lossproof_consumers::tables_file::TABLES_FILE)
    }

    /// The tables the reconciler scores: the workload's, not the probe's.
    #[must_use]
    pub fn scored_tables(&self) -> Vec<&str> {
        self.workload
            .table_names()
            .into_iter()
            .filter(|t| *t != lossproof_vocabulary::workloads::PROBE_TABLE)
            .collect()
    }

    /// A consumer's messages file ([`lossproof_consumers::Message`]).
    #[must_use]
    pub fn messages_of(&self, consumer: &str) -> PathBuf {
        self.logs.join(format!("{consumer}.messages.jsonl"))
    }
}
