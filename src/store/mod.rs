//! The store: fedsched's state in sled (0.34.7) under `state_dir/db`.
//!
//! Owns:
//! - **versioned cluster snapshots**: a new version only when
//!   [`ClusterSnapshot::content_hash`] changes; otherwise only the head's "last seen" moves;
//! - the **current placement** of every workload ([`PlacementRecord`]);
//! - the **append-only scheduling history** ([`HistoryRecord`]): every decision with its
//!   inputs and reasons, so that it can be explained and replayed;
//! - **content-addressed blobs**: the template and policy JSON a decision used, keyed by
//!   [`crate::util::hash::fnv1a64`];
//! - the value format ([`codec`]: a versioned envelope around bincode or JSON) and the key
//!   layout ([`keys`]);
//! - per workload, the **decision key** a restarted reconciler reuses an unchanged decision
//!   by ([`StoredDecision`]);
//! - the **stability state** (failover, descheduling, move-back: `stability.rs`);
//! - the exclusive lock on the state directory (`fedsched.lock`).
//!
//! Does not know: HTTP, YAML, the output directory (paths in [`PlacementRecord::files`] are
//! opaque strings), the clock (callers pass times), nor how decisions are made. The API is
//! synchronous and may block on disk (`flush`): async callers use `spawn_blocking`.
//!
//! Durability: writes are visible at once and durable after sled's background flush (≤500 ms)
//! or [`Store::flush`], which callers use as a barrier before any externally visible effect.
//! Multi-record updates (a snapshot version with its head, a history record with its
//! placement) are single sled transactions.
//!
//! # Its stage of the pass
//!
//! **Record** (`store`): changed decisions are appended to the history with their inputs (snapshot
//! versions, content hashes of template and policy, previous placement), and the placement is
//! updated, in batches of 256 decisions per store transaction (`Store::record_decisions`; same
//! sequence numbers and records as one-by-one writes: the records are encoded on every core before
//! the transaction, with the numbers the counter will hand out, which the transaction checks). Then
//! the store is flushed.
//!
//! # In detail
//!
//! The only module that knows sled: versioned envelope codec (a decode may allocate at most
//! `codec::DECODE_LIMIT`: a damaged length is an error, not an abort), record types (layout 2:
//! compact results, the versions map of a pass and its sorted cluster names as content-addressed
//! blobs, written once per distinct content; a layout 1 store is rewritten on open,
//! `Store::upgrade_to_2`; history schema 4 and placement schema 3 write a result's verdicts as
//! rows, `store/compact.rs`: plugin and estimator names once per result, cluster names sharing
//! their prefix with the previous one, about a third of the plain form's bytes; older schemas
//! decode), keys, and the `decisions` tree (`store/decisions.rs`, `StoredDecision`: per workload
//! the decision cache key, the filtered clusters and their state, its files as (cluster, path,
//! content hash), kept files, problems, requirements, the placement `history_seq` it was written
//! with, the workload's last history record (so a restart decodes no history record to compare
//! notes), each file's proven stat, and whether its outcome read capacity (so a restart reuses a
//! decision that did not whatever the rebuilt views' states, as the daemon does); schema 3, 1 and 2
//! upgraded in memory), the `parsed` tree (`store/parsed.rs`: the repository's parsed documents, a
//! cache), and the `stability` tree (`store/stability.rs`: the engine state, versioned; history
//! records of schema 3 carry the state blob their pass started from). Snapshots are schema 4 (pods
//! per owner with readiness and transition times); older schemas are read and upgraded. Knows
//! nothing of YAML, HTTP or the output directory.

pub mod codec;
mod compact;
mod copy;
mod decisions;
pub mod keys;
mod parsed;
mod pending;
mod records;
mod replay;
mod sealed;
pub use copy::StoreCopy;
pub use sealed::SealedEntry;
mod rollouts;
mod stability;

use std::fs::{File, OpenOptions, TryLockError};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sled::Transactional;
use sled::transaction::{ConflictableTransactionError, ConflictableTransactionResult, TransactionError};

pub use decisions::{LastHistory, StoredDecision};
pub use records::{DecisionInputs, HistoryRecord, PlacementRecord, SnapshotMeta};
pub use replay::{ReplayPass, ReplayRef, SourceRun, StoredPass, source_runs};

use std::collections::{BTreeMap, HashMap};

use crate::model::{ClusterSnapshot, Observed};
use crate::policy::ObjectKey;
use crate::util::hash::fnv1a64;
use codec::{Versioned, decode, decode_blob, encode, encode_blob};

/// Layout version of the whole store, kept in `meta/schema_version`.
/// 2: placements and history in record schema 2 (compact results, versions as blobs); a
/// layout 1 store is upgraded when opened ([`Store::open`]).
pub const STORE_SCHEMA: u32 = 2;
/// Name of the lock file inside the state directory.
pub const LOCK_FILE: &str = "fedsched.lock";
/// Name of the sled directory inside the state directory.
pub const DB_DIR: &str = "db";
/// sled page cache size.
pub const CACHE_CAPACITY: u64 = 64 << 20;
/// How often [`Store::record_decisions`] encodes a batch again when the sequence counter
/// moved before its transaction (it cannot while this process is the only writer).
const RECORD_ATTEMPTS: usize = 3;
/// sled background flush interval.
pub const FLUSH_EVERY_MS: u64 = 500;

/// Errors of the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Another process holds the state directory's lock.
    #[error("state directory {} is in use by another fedsched process", path.display())]
    Locked { path: PathBuf },
    /// A command that reads a store found none (`state_dir/db` does not exist).
    #[error("no store at {}: nothing was recorded there (is --state or state_dir the daemon's?)", path.display())]
    Missing { path: PathBuf },
    /// A file system operation outside sled failed.
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    /// sled reported corruption (or panicked while opening).
    #[error(
        "store at {} is corrupt ({detail}); move it aside (e.g. `mv {} {}.corrupt`) and restart with \
         an empty store",
        path.display(), path.display(), path.display()
    )]
    Corrupt { path: PathBuf, detail: String },
    /// Any other sled error.
    #[error("store at {}: {source}", path.display())]
    Sled { path: PathBuf, source: sled::Error },
    /// The store was written by a newer fedsched.
    #[error("store at {} has schema version {found}, newer than this fedsched supports ({supported}); upgrade fedsched", path.display())]
    NewerStore { path: PathBuf, found: u32, supported: u32 },
    /// The store holds data but no (or an unreadable) schema version.
    #[error("store at {} has data but {detail}; move it aside and restart", path.display())]
    Unversioned { path: PathBuf, detail: String },
    /// A value is shorter than the envelope header.
    #[error("{what}: value of {len} bytes is too short for the envelope header")]
    ShortEnvelope { what: &'static str, len: usize },
    /// A value does not start with the envelope magic byte.
    #[error("{what}: bad magic byte {found:#04x}, expected 0xf5")]
    BadMagic { what: &'static str, found: u8 },
    /// A value uses a codec this binary does not know.
    #[error("{what}: unknown codec {codec}")]
    UnknownCodec { what: &'static str, codec: u8 },
    /// A value uses a schema this binary does not know.
    #[error("{what}: schema {found} is not known to this fedsched (it writes schema {supported})")]
    Schema { what: &'static str, found: u16, supported: u16 },
    /// The payload ended before the record did.
    #[error("{what}: payload of {len} bytes is truncated")]
    Truncated { what: &'static str, len: usize, additional: usize },
    /// The record ended before the payload did.
    #[error("{what}: {} trailing bytes after the record ({consumed} of {len} consumed)", len - consumed)]
    TrailingBytes { what: &'static str, consumed: usize, len: usize },
    /// bincode could not decode the payload.
    #[error("{what}: cannot decode: {source}")]
    Decode { what: &'static str, source: bincode::error::DecodeError },
    /// serde_json could not decode the payload.
    #[error("{what}: cannot decode json: {source}")]
    DecodeJson { what: &'static str, source: serde_json::Error },
    /// bincode could not encode a record.
    #[error("{what}: cannot encode: {source}")]
    Encode { what: &'static str, source: bincode::error::EncodeError },
    /// serde_json could not encode a record.
    #[error("{what}: cannot encode json: {source}")]
    EncodeJson { what: &'static str, source: serde_json::Error },
    /// A name would break the key layout.
    #[error("invalid {what} name {name:?}: {reason}")]
    InvalidName { what: &'static str, name: String, reason: &'static str },
    /// A key or counter in a tree does not have the expected form.
    #[error("malformed key or counter in tree {tree}: {key:02x?}")]
    BadKey { tree: &'static str, key: Vec<u8> },
    /// Two different blobs have the same FNV-1a 64 hash.
    #[error("blob hash collision at {hash:016x}: different content is already stored")]
    BlobCollision { hash: u64 },
    /// Records that must agree do not.
    #[error("inconsistent store: {0}")]
    Inconsistent(String),
    /// A write through a dry-run handle ([`Store::dry_run`]) that it does not answer in memory.
    #[error("a dry run does not write the store ({what})")]
    DryRun { what: &'static str },
}

struct Inner {
    db: sled::Db,
    meta: sled::Tree,
    snapshots: sled::Tree,
    heads: sled::Tree,
    placements: sled::Tree,
    history: sled::Tree,
    blobs: sled::Tree,
    /// Persisted decision keys ([`decisions`]).
    decisions: sled::Tree,
    /// The stability engine's state ([`stability`]).
    stability: sled::Tree,
    /// Progressive rollouts' state, per workload ([`rollouts`]).
    rollouts: sled::Tree,
    /// The repository's parsed documents ([`parsed`]).
    parsed: sled::Tree,
    /// Fingerprints of the Secrets published encrypted, and their key ([`sealed`]).
    sealed: sled::Tree,
    /// The keys a pending record wrote so far ([`Store::begin_record`]).
    capture: std::sync::Mutex<Option<pending::Capture>>,
    db_path: PathBuf,
    /// Placements decoded from the `placements` tree since the store was opened
    /// ([`Store::placements_decoded`]).
    placements_decoded: std::sync::atomic::AtomicU64,
    /// Holds the exclusive lock; declared last so that it is released after sled closes.
    _lock: File,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Err(e) = self.db.flush() {
            tracing::warn!(path = %self.db_path.display(), error = %e, "final store flush failed");
        }
    }
}

/// Handle to the store; cheap to clone, shareable across threads.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
    /// Set on a dry-run handle ([`Store::dry_run`]): what its writes would have written.
    dry: Option<Arc<DryRun>>,
}

/// What a dry-run handle answers instead of writing: blobs (content-addressed, so a later read
/// of one finds it) and the snapshot versions it handed out, per cluster (content hash,
/// version), so that the same observation gets the same version twice.
#[derive(Default)]
struct DryRun {
    blobs: std::sync::Mutex<HashMap<u64, Vec<u8>>>,
    heads: std::sync::Mutex<HashMap<String, (u64, u64)>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("db_path", &self.inner.db_path).finish()
    }
}

type TxResult<T> = ConflictableTransactionResult<T, StoreError>;

/// Turns a store error inside a transaction closure into an abort.
fn abort<T>(r: Result<T, StoreError>) -> TxResult<T> {
    r.map_err(ConflictableTransactionError::Abort)
}

fn sled_error(path: &Path, e: sled::Error) -> StoreError {
    match e {
        sled::Error::Corruption { at, .. } => StoreError::Corrupt {
            path: path.to_path_buf(),
            detail: match at {
                Some(at) => format!("sled reports corruption at {at:?}"),
                None => "sled reports corruption".to_string(),
            },
        },
        source => StoreError::Sled { path: path.to_path_buf(), source },
    }
}

/// Reads a big-endian counter stored in `meta`.
fn counter(tree: &'static str, bytes: Option<&[u8]>) -> Result<u64, StoreError> {
    match bytes {
        None => Ok(0),
        Some(b) if b.len() == 8 => keys::be_u64(tree, b),
        Some(b) => Err(StoreError::BadKey { tree, key: b.to_vec() }),
    }
}

/// Hands out the next history sequence number inside a transaction.
fn next_seq(meta: &sled::transaction::TransactionalTree) -> TxResult<u64> {
    let last = abort(counter("meta", meta.get(keys::HISTORY_SEQ)?.as_deref()))?;
    let seq = abort(last.checked_add(1).ok_or(StoreError::BadKey { tree: "meta", key: keys::HISTORY_SEQ.to_vec() }))?;
    meta.insert(keys::HISTORY_SEQ, &seq.to_be_bytes())?;
    Ok(seq)
}

/// Decodes `values` in their order, on every core (a restart reads 10,000 placements and as
/// many persisted decisions).
pub(crate) fn decode_all<T: codec::Versioned + Send>(values: &[sled::IVec]) -> Vec<Result<T, StoreError>> {
    crate::util::threads::map_ordered(values, crate::util::threads::workers(), |v| decode::<T>(v))
}

fn open_sled(db_path: &Path) -> Result<sled::Db, StoreError> {
    // Our own lock is held, so no other fedsched uses this store. sled's file lock can still be
    // held for a moment by the background threads of a handle this process just dropped: retry
    // briefly instead of failing a reopen.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
    loop {
        match open_sled_once(db_path) {
            // sled reports it as `Other` with this text (sled 0.34 `Config::try_lock`).
            Err(StoreError::Sled { source: sled::Error::Io(e), .. })
                if e.to_string().contains("could not acquire lock") && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            other => return other,
        }
    }
}

fn open_sled_once(db_path: &Path) -> Result<sled::Db, StoreError> {
    let config = sled::Config::new()
        .path(db_path)
        .cache_capacity(CACHE_CAPACITY)
        .flush_every_ms(Some(FLUSH_EVERY_MS))
        .mode(sled::Mode::LowSpace);
    // sled 0.34 panics on some corrupt files instead of returning an error.
    match catch_unwind(AssertUnwindSafe(|| config.open())) {
        Ok(Ok(db)) => Ok(db),
        Ok(Err(e)) => Err(sled_error(db_path, e)),
        Err(panic) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            Err(StoreError::Corrupt {
                path: db_path.to_path_buf(),
                detail: format!("sled panicked while opening: {msg}"),
            })
        }
    }
}

impl Store {
    /// Opens (or creates) the store in `state_dir`.
    ///
    /// First takes an exclusive, non-blocking lock on `state_dir/fedsched.lock` and fails at
    /// once with [`StoreError::Locked`] if another process holds it; the lock is held until the
    /// last clone of the store is dropped. Then opens sled at `state_dir/db` (64 MiB cache,
    /// flush every 500 ms, low-space mode) and checks or writes `meta/schema_version`.
    pub fn open(state_dir: &Path) -> Result<Store, StoreError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| StoreError::Io { path, source }
        };
        std::fs::create_dir_all(state_dir).map_err(io(state_dir))?;
        let lock_path = state_dir.join(LOCK_FILE);
        let lock = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock_path)
            .map_err(io(&lock_path))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(StoreError::Locked { path: state_dir.to_path_buf() });
            }
            Err(TryLockError::Error(source)) => {
                return Err(StoreError::Io { path: lock_path, source });
            }
        }

        let db_path = state_dir.join(DB_DIR);
        // sled writes `conf` when it creates a database: tells a new store from one that lost
        // everything (sled silently drops log segments that fail their checksum).
        let existed = db_path.join("conf").exists();
        let db = open_sled(&db_path)?;
        let tree = |name: &str| db.open_tree(name).map_err(|e| sled_error(&db_path, e));
        let inner = Inner {
            meta: tree("meta")?,
            snapshots: tree("snapshots")?,
            heads: tree("snapshot_heads")?,
            placements: tree("placements")?,
            history: tree("history")?,
            blobs: tree("blobs")?,
            decisions: tree("decisions")?,
            stability: tree("stability")?,
            rollouts: tree("rollouts")?,
            parsed: tree("parsed")?,
            sealed: tree("sealed")?,
            capture: Default::default(),
            db,
            db_path,
            placements_decoded: Default::default(),
            _lock: lock,
        };
        let store = Store { inner: Arc::new(inner), dry: None };
        store.check_schema(existed)?;
        Ok(store)
    }

    /// Whether another process holds the store of `state_dir` (a running daemon): its lock
    /// file exists and cannot be locked now. Creates nothing; a lock taken here is released at
    /// once.
    pub fn in_use(state_dir: &Path) -> bool {
        match File::open(state_dir.join(LOCK_FILE)) {
            Ok(lock) => matches!(lock.try_lock_shared(), Err(TryLockError::WouldBlock)),
            Err(_) => false,
        }
    }

    fn err(&self, e: sled::Error) -> StoreError {
        sled_error(&self.inner.db_path, e)
    }

    fn tx_err(&self, e: TransactionError<StoreError>) -> StoreError {
        match e {
            TransactionError::Abort(e) => e,
            TransactionError::Storage(e) => self.err(e),
        }
    }

    fn check_schema(&self, existed: bool) -> Result<(), StoreError> {
        let i = &self.inner;
        let path = || i.db_path.clone();
        match i.meta.get(keys::SCHEMA_VERSION).map_err(|e| self.err(e))? {
            Some(v) => {
                let found =
                    <[u8; 4]>::try_from(v.as_ref()).map(u32::from_be_bytes).map_err(|_| StoreError::Unversioned {
                        path: path(),
                        detail: format!("a malformed schema_version {:02x?}", v.as_ref()),
                    })?;
                if found > STORE_SCHEMA {
                    return Err(StoreError::NewerStore { path: path(), found, supported: STORE_SCHEMA });
                }
                if found < 1 {
                    return Err(StoreError::Unversioned { path: path(), detail: format!("schema_version {found}") });
                }
                if found < 2 {
                    self.upgrade_to_2()?;
                }
                Ok(())
            }
            None if existed => Err(StoreError::Corrupt {
                path: path(),
                detail: "the existing database has no schema_version: sled discarded records it could not verify"
                    .into(),
            }),
            None => {
                let trees = [&i.snapshots, &i.heads, &i.placements, &i.history, &i.blobs];
                if trees.iter().any(|t| !t.is_empty()) || !i.meta.is_empty() {
                    return Err(StoreError::Unversioned { path: path(), detail: "no schema_version".into() });
                }
                i.meta.insert(keys::SCHEMA_VERSION, &STORE_SCHEMA.to_be_bytes()).map_err(|e| self.err(e))?;
                i.db.flush().map_err(|e| self.err(e))?;
                Ok(())
            }
        }
    }

    /// Layout 1 → 2: rewrites every placement and history record of schema 1 in schema 2
    /// (storing the blobs the new form references), then the layout version. Idempotent: a
    /// crash midway leaves records of both schemas, and the next open finishes the job.
    fn upgrade_to_2(&self) -> Result<(), StoreError> {
        let i = &self.inner;
        let mut upgraded = 0usize;
        for (tree, what) in [(&i.placements, PlacementRecord::WHAT), (&i.history, HistoryRecord::WHAT)] {
            for kv in tree.iter() {
                let (k, v) = kv.map_err(|e| self.err(e))?;
                let (h, payload) = codec::open_envelope(what, &v)?;
                if h.schema != 1 {
                    continue;
                }
                let (bytes, blobs) = if what == PlacementRecord::WHAT {
                    let old = codec::decode_payload::<records::PlacementRecordV1>(what, h.codec, payload)?;
                    let up = old.upgrade();
                    (encode(&up.record)?, up.blobs)
                } else {
                    let old = codec::decode_payload::<records::HistoryRecordV1>(what, h.codec, payload)?;
                    let up = old.upgrade();
                    (encode(&up.record)?, up.blobs)
                };
                for b in blobs {
                    self.put_blob(&b)?;
                }
                tree.insert(k, bytes).map_err(|e| self.err(e))?;
                upgraded += 1;
            }
        }
        i.meta.insert(keys::SCHEMA_VERSION, &STORE_SCHEMA.to_be_bytes()).map_err(|e| self.err(e))?;
        i.db.flush().map_err(|e| self.err(e))?;
        tracing::info!(records = upgraded, "store upgraded to layout 2 (compact decision records)");
        Ok(())
    }

    /// Path of the sled directory.
    pub fn db_path(&self) -> &Path {
        &self.inner.db_path
    }

    // ---------------------------------------------------------------------------------------
    // Snapshots

    /// Records an observation of a cluster. If its content hash equals the head's, only the
    /// head's `last_seen_ms` (never backwards) and confidence move; otherwise a new version is
    /// written together with the head in one transaction. Returns the head version and whether
    /// it is new.
    pub fn record_snapshot(&self, snap: &ClusterSnapshot, observed: Observed) -> Result<(u64, bool), StoreError> {
        self.record_prepared_snapshot(snap, observed, PreparedSnapshot { hash: snap.content_hash(), body: None })
    }

    /// [`Store::record_snapshot`] with the snapshot's content hash, and maybe its encoded
    /// body, computed beforehand ([`PreparedSnapshot::of`]: on any thread, without the store);
    /// `snap` is the snapshot as recorded (its freshness the one the body was prepared with).
    pub fn record_prepared_snapshot(
        &self,
        snap: &ClusterSnapshot,
        observed: Observed,
        prepared: PreparedSnapshot,
    ) -> Result<(u64, bool), StoreError> {
        let name = snap.name.as_str();
        keys::check_name("cluster", name)?;
        let PreparedSnapshot { hash, mut body } = prepared;
        let head_key = name.as_bytes();
        if let Some(dry) = &self.dry {
            return self.dry_snapshot(dry, name, hash);
        }
        loop {
            // Fast path outside the transaction: the body is only encoded when needed.
            let needs_body = match self.inner.heads.get(head_key).map_err(|e| self.err(e))? {
                Some(v) => decode::<SnapshotMeta>(&v)?.hash != hash,
                None => true,
            };
            if needs_body && body.is_none() {
                body = Some(encode(snap)?);
            }
            let result = (&self.inner.snapshots, &self.inner.heads).transaction(|(snaps, heads)| {
                let head = match heads.get(head_key)? {
                    Some(v) => Some(abort(decode::<SnapshotMeta>(&v))?),
                    None => None,
                };
                match head {
                    Some(mut h) if h.hash == hash => {
                        h.last_seen_ms = h.last_seen_ms.max(observed.at_ms);
                        h.confidence = observed.confidence;
                        // The same version (an outage's reason text is not content): the head
                        // says the latest reason.
                        h.health = snap.health.clone();
                        heads.insert(head_key, abort(encode(&h))?)?;
                        Ok(Some((h.version, false)))
                    }
                    prev => {
                        let Some(body) = body.as_ref() else {
                            // The head changed since the fast path: retry with the body.
                            return Ok(None);
                        };
                        let version = match &prev {
                            None => 1,
                            Some(p) => abort(p.version.checked_add(1).ok_or_else(|| {
                                StoreError::Inconsistent(format!("cluster {name}: version counter exhausted"))
                            }))?,
                        };
                        if let Some(p) = &prev {
                            // Freeze the previous version's meta with its final last_seen.
                            snaps.insert(keys::snapshot(name, keys::SNAP_META, p.version), abort(encode(p))?)?;
                        }
                        let meta = SnapshotMeta {
                            version,
                            hash,
                            first_seen_ms: observed.at_ms,
                            last_seen_ms: observed.at_ms,
                            health: snap.health.clone(),
                            confidence: observed.confidence,
                        };
                        let meta = abort(encode(&meta))?;
                        snaps.insert(keys::snapshot(name, keys::SNAP_META, version), meta.as_slice())?;
                        snaps.insert(keys::snapshot(name, keys::SNAP_BODY, version), body.as_slice())?;
                        heads.insert(head_key, meta)?;
                        Ok(Some((version, true)))
                    }
                }
            });
            match result.map_err(|e| self.tx_err(e))? {
                Some(r) => return Ok(r),
                None => continue,
            }
        }
    }

    /// The head of a cluster: its newest version's meta (with the latest `last_seen_ms`) and
    /// content.
    pub fn latest_snapshot(&self, cluster: &str) -> Result<Option<(SnapshotMeta, ClusterSnapshot)>, StoreError> {
        keys::check_name("cluster", cluster)?;
        let Some(head) = self.inner.heads.get(cluster.as_bytes()).map_err(|e| self.err(e))? else {
            return Ok(None);
        };
        let meta = decode::<SnapshotMeta>(&head)?;
        match self.snapshot(cluster, meta.version)? {
            Some(snap) => Ok(Some((meta, snap))),
            None => Err(StoreError::Inconsistent(format!(
                "head of cluster {cluster} names version {} which is not stored",
                meta.version
            ))),
        }
    }

    /// The meta of a cluster's head (its newest version, with the latest `last_seen_ms`),
    /// without its content.
    pub fn snapshot_head(&self, cluster: &str) -> Result<Option<SnapshotMeta>, StoreError> {
        keys::check_name("cluster", cluster)?;
        match self.inner.heads.get(cluster.as_bytes()).map_err(|e| self.err(e))? {
            Some(head) => Ok(Some(decode::<SnapshotMeta>(&head)?)),
            None => Ok(None),
        }
    }

    /// One version of a cluster's snapshot.
    pub fn snapshot(&self, cluster: &str, version: u64) -> Result<Option<ClusterSnapshot>, StoreError> {
        keys::check_name("cluster", cluster)?;
        let key = keys::snapshot(cluster, keys::SNAP_BODY, version);
        match self.inner.snapshots.get(key).map_err(|e| self.err(e))? {
            Some(v) => Ok(Some(decode::<ClusterSnapshot>(&v)?)),
            None => Ok(None),
        }
    }

    /// Every version of a cluster, oldest first; the newest carries the head's `last_seen_ms`.
    pub fn snapshot_versions(&self, cluster: &str) -> Result<Vec<SnapshotMeta>, StoreError> {
        keys::check_name("cluster", cluster)?;
        let mut out = Vec::new();
        for kv in self.inner.snapshots.scan_prefix(keys::snapshot_prefix(cluster, keys::SNAP_META)) {
            let (_, v) = kv.map_err(|e| self.err(e))?;
            out.push(decode::<SnapshotMeta>(&v)?);
        }
        if let Some(head) = self.inner.heads.get(cluster.as_bytes()).map_err(|e| self.err(e))? {
            let head = decode::<SnapshotMeta>(&head)?;
            if let Some(last) = out.last_mut().filter(|m| m.version == head.version) {
                *last = head;
            }
        }
        Ok(out)
    }

    /// Names of all clusters with at least one snapshot, sorted.
    pub fn clusters(&self) -> Result<Vec<String>, StoreError> {
        let mut out = Vec::new();
        for kv in self.inner.heads.iter() {
            let (k, _) = kv.map_err(|e| self.err(e))?;
            let name = String::from_utf8(k.to_vec())
                .map_err(|_| StoreError::BadKey { tree: "snapshot_heads", key: k.to_vec() })?;
            out.push(name);
        }
        Ok(out)
    }

    // ---------------------------------------------------------------------------------------
    // Blobs

    /// Stores bytes under their FNV-1a 64 hash and returns it; storing the same bytes again is
    /// a no-op. Different bytes with an existing hash are refused ([`StoreError::BlobCollision`]).
    pub fn put_blob(&self, bytes: &[u8]) -> Result<u64, StoreError> {
        self.put_blob_at(fnv1a64(bytes), bytes)
    }

    /// Stores `bytes` under `hash`, the hash of other bytes they stand for: a Secret's object
    /// or file with its data redacted ([`crate::secrets::redact`]) under the hash of the
    /// original, which the records name.
    pub fn put_blob_at(&self, hash: u64, bytes: &[u8]) -> Result<u64, StoreError> {
        let key = keys::blob(hash);
        let same = |stored: &[u8]| -> Result<u64, StoreError> {
            if decode_blob(stored)? == bytes { Ok(hash) } else { Err(StoreError::BlobCollision { hash }) }
        };
        if let Some(stored) = self.inner.blobs.get(key).map_err(|e| self.err(e))? {
            return same(&stored);
        }
        if let Some(dry) = &self.dry {
            let mut blobs = dry.blobs.lock().unwrap_or_else(|p| p.into_inner());
            return match blobs.get(&hash) {
                Some(held) if held.as_slice() != bytes => Err(StoreError::BlobCollision { hash }),
                Some(_) => Ok(hash),
                None => {
                    blobs.insert(hash, bytes.to_vec());
                    Ok(hash)
                }
            };
        }
        let value = encode_blob(bytes)?;
        match self.inner.blobs.compare_and_swap(key, None::<&[u8]>, Some(value)).map_err(|e| self.err(e))? {
            Ok(()) => Ok(hash),
            Err(cas) => match cas.current {
                Some(stored) => same(&stored),
                None => Err(StoreError::Inconsistent(format!("blob {hash:016x} vanished during insert"))),
            },
        }
    }

    /// The bytes stored under a hash.
    pub fn blob(&self, hash: u64) -> Result<Option<Vec<u8>>, StoreError> {
        match self.inner.blobs.get(keys::blob(hash)).map_err(|e| self.err(e))? {
            Some(v) => Ok(Some(decode_blob(&v)?)),
            None => Ok(self
                .dry
                .as_ref()
                .and_then(|dry| dry.blobs.lock().unwrap_or_else(|p| p.into_inner()).get(&hash).cloned())),
        }
    }

    /// Stores a pass's cluster → snapshot version map as a blob; returns its hash (what
    /// [`DecisionInputs::snapshot_versions`] holds).
    pub fn put_versions(&self, versions: &BTreeMap<String, u64>) -> Result<u64, StoreError> {
        self.put_blob(&records::versions_blob(versions))
    }

    /// The versions map stored under a hash.
    pub fn versions(&self, hash: u64) -> Result<Option<BTreeMap<String, u64>>, StoreError> {
        const WHAT: &str = "snapshot versions blob";
        match self.blob(hash)? {
            Some(b) => {
                serde_json::from_slice(&b).map(Some).map_err(|source| StoreError::DecodeJson { what: WHAT, source })
            }
            None => Ok(None),
        }
    }

    /// Stores the sorted cluster names of a pass (the universe of its results,
    /// [`crate::schedule::ScheduleResult::universe`]); returns its id.
    pub fn put_universe(&self, names: &[String]) -> Result<u64, StoreError> {
        self.put_blob(&crate::schedule::fleet::names_blob(names))
    }

    /// The sorted cluster names of a universe id (empty for 0, the empty universe).
    pub fn universe(&self, id: u64) -> Result<Option<Vec<String>>, StoreError> {
        const WHAT: &str = "cluster names blob";
        if id == 0 {
            return Ok(Some(Vec::new()));
        }
        match self.blob(id)? {
            Some(b) => {
                serde_json::from_slice(&b).map(Some).map_err(|source| StoreError::DecodeJson { what: WHAT, source })
            }
            None => Ok(None),
        }
    }

    /// Every cluster's verdict of a result ([`crate::schedule::ScheduleResult::expand`] over
    /// its stored universe); an error when the universe is not stored.
    pub fn expand(
        &self,
        result: &crate::schedule::ScheduleResult,
    ) -> Result<Vec<crate::schedule::ClusterVerdict>, StoreError> {
        match self.universe(result.universe)? {
            Some(names) => Ok(result.expand(&names)),
            None => Err(StoreError::Inconsistent(format!("cluster names {:016x} are not stored", result.universe))),
        }
    }

    // ---------------------------------------------------------------------------------------
    // Placements

    /// The current placement of a workload.
    pub fn placement(&self, key: &ObjectKey) -> Result<Option<PlacementRecord>, StoreError> {
        match self.inner.placements.get(keys::workload(key)?).map_err(|e| self.err(e))? {
            Some(v) => {
                self.inner.placements_decoded.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Ok(Some(decode::<PlacementRecord>(&v)?))
            }
            None => Ok(None),
        }
    }

    /// How many placements this store (all its handles) decoded since it was opened: what a
    /// reader that should use the pass's placements (the web view, the API) must not grow.
    pub fn placements_decoded(&self) -> u64 {
        self.inner.placements_decoded.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Every placement, ordered by [`ObjectKey::store_key`].
    pub fn placements(&self) -> Result<Vec<PlacementRecord>, StoreError> {
        let mut values = Vec::new();
        for kv in self.inner.placements.iter() {
            values.push(kv.map_err(|e| self.err(e))?.1);
        }
        self.inner.placements_decoded.fetch_add(values.len() as u64, std::sync::atomic::Ordering::Relaxed);
        decode_all(&values).into_iter().collect()
    }

    /// Writes (replaces) a workload's placement.
    pub fn put_placement(&self, rec: &PlacementRecord) -> Result<(), StoreError> {
        self.writable("placement")?;
        let key = keys::workload(&rec.workload)?;
        self.note_old(&self.inner.placements, [&key])?;
        self.inner.placements.insert(key, encode(rec)?).map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Forgets a workload's placement (its history stays).
    pub fn remove_placement(&self, key: &ObjectKey) -> Result<(), StoreError> {
        self.writable("placement")?;
        let key = keys::workload(key)?;
        self.note_old(&self.inner.placements, [&key])?;
        self.inner.placements.remove(key).map_err(|e| self.err(e))?;
        Ok(())
    }

    // ---------------------------------------------------------------------------------------
    // History

    /// Appends a decision to the history, assigning `rec.seq` (monotonic across workloads).
    pub fn append_history(&self, mut rec: HistoryRecord) -> Result<u64, StoreError> {
        self.writable("history")?;
        let prefix = keys::history_prefix(&rec.workload)?;
        self.note_next_seqs(&[&prefix])?;
        let seq = (&self.inner.meta, &self.inner.history)
            .transaction(|(meta, history)| {
                let seq = next_seq(meta)?;
                let mut r = rec.clone();
                r.seq = seq;
                history.insert(keys::history(&prefix, seq), abort(encode(&r))?)?;
                Ok(seq)
            })
            .map_err(|e| self.tx_err(e))?;
        rec.seq = seq;
        Ok(seq)
    }

    /// Appends a decision and writes the workload's placement in one transaction. The
    /// placement's `history_seq` is set to the assigned sequence number, which is returned.
    pub fn record_decision(&self, history: HistoryRecord, placement: &PlacementRecord) -> Result<u64, StoreError> {
        self.writable("history")?;
        if history.workload != placement.workload {
            return Err(StoreError::Inconsistent(format!(
                "decision for {} with a placement for {}",
                history.workload, placement.workload
            )));
        }
        let prefix = keys::history_prefix(&history.workload)?;
        let pkey = keys::workload(&placement.workload)?;
        self.note_next_seqs(&[&prefix])?;
        self.note_old(&self.inner.placements, [&pkey])?;
        (&self.inner.meta, &self.inner.history, &self.inner.placements)
            .transaction(|(meta, hist, places)| {
                let seq = next_seq(meta)?;
                let mut h = history.clone();
                h.seq = seq;
                hist.insert(keys::history(&prefix, seq), abort(encode(&h))?)?;
                let mut p = placement.clone();
                p.history_seq = seq;
                places.insert(pkey.as_slice(), abort(encode(&p))?)?;
                Ok(seq)
            })
            .map_err(|e| self.tx_err(e))
    }

    /// [`Store::record_decision`] for many decisions in one transaction (a sled transaction
    /// costs ≈ 0.5 ms whatever its size, so a pass records its decisions in batches). The
    /// sequence numbers are consecutive, in the order given; each record's `seq` and
    /// placement's `history_seq` are set to its number; returns them.
    pub fn record_decisions(&self, decisions: &mut [(HistoryRecord, PlacementRecord)]) -> Result<Vec<u64>, StoreError> {
        self.writable("history")?;
        let mut keyed = Vec::with_capacity(decisions.len());
        for (history, placement) in decisions.iter() {
            if history.workload != placement.workload {
                return Err(StoreError::Inconsistent(format!(
                    "decision for {} with a placement for {}",
                    history.workload, placement.workload
                )));
            }
            keyed.push((keys::history_prefix(&history.workload)?, keys::workload(&placement.workload)?));
        }
        if decisions.is_empty() {
            return Ok(Vec::new());
        }
        let count = u64::try_from(decisions.len()).unwrap_or(u64::MAX);
        let prefixes: Vec<&[u8]> = keyed.iter().map(|(prefix, _)| prefix.as_slice()).collect();
        self.note_next_seqs(&prefixes)?;
        self.note_old(&self.inner.placements, keyed.iter().map(|(_, pkey)| pkey))?;
        for _ in 0..RECORD_ATTEMPTS {
            // The sequence numbers the transaction will hand out (this process is the store's
            // only writer: the counter does not move in between; if it did, start again), so
            // the records are encoded before it, on every core.
            let last = counter("meta", self.inner.meta.get(keys::HISTORY_SEQ).map_err(|e| self.err(e))?.as_deref())?;
            let end =
                last.checked_add(count).ok_or(StoreError::BadKey { tree: "meta", key: keys::HISTORY_SEQ.to_vec() })?;
            for ((history, placement), seq) in decisions.iter_mut().zip(last + 1..) {
                history.seq = seq;
                placement.history_seq = seq;
            }
            let encoded = crate::util::threads::map_ordered(decisions, crate::util::threads::workers(), |(h, p)| {
                Ok::<_, StoreError>((encode(h)?, encode(p)?))
            })
            .into_iter()
            .collect::<Result<Vec<_>, _>>()?;
            let written = (&self.inner.meta, &self.inner.history, &self.inner.placements)
                .transaction(|(meta, hist, places)| {
                    if abort(counter("meta", meta.get(keys::HISTORY_SEQ)?.as_deref()))? != last {
                        return Ok(false);
                    }
                    for (((h, p), (prefix, pkey)), (hb, pb)) in decisions.iter().zip(&keyed).zip(&encoded) {
                        hist.insert(keys::history(prefix, h.seq), hb.as_slice())?;
                        places.insert(pkey.as_slice(), pb.as_slice())?;
                        debug_assert_eq!(h.seq, p.history_seq);
                    }
                    meta.insert(keys::HISTORY_SEQ, &end.to_be_bytes())?;
                    Ok(true)
                })
                .map_err(|e| self.tx_err(e))?;
            if written {
                return Ok(decisions.iter().map(|(h, _)| h.seq).collect());
            }
        }
        Err(StoreError::Inconsistent(format!(
            "the history sequence counter moved during each of {RECORD_ATTEMPTS} attempts to record a batch: another writer?"
        )))
    }

    /// Before handing out the next `prefixes.len()` history sequence numbers, in this order:
    /// while a record is captured ([`Store::begin_record`]), the counter and the history keys
    /// they make are logged (as absent).
    fn note_next_seqs(&self, prefixes: &[&[u8]]) -> Result<(), StoreError> {
        if !self.capturing() {
            return Ok(());
        }
        let last = self.last_history_seq()?;
        self.note_old(&self.inner.meta, [keys::HISTORY_SEQ])?;
        let history = prefixes.iter().zip(last + 1..).map(|(prefix, seq)| keys::history(prefix, seq));
        self.note_old(&self.inner.history, history)
    }

    /// The decisions for one workload, oldest first.
    pub fn history(&self, key: &ObjectKey) -> Result<Vec<HistoryRecord>, StoreError> {
        let mut out = Vec::new();
        for kv in self.inner.history.scan_prefix(keys::history_prefix(key)?) {
            let (_, v) = kv.map_err(|e| self.err(e))?;
            out.push(decode::<HistoryRecord>(&v)?);
        }
        Ok(out)
    }

    /// Every workload that has history, including workloads no longer placed (sorted).
    pub fn workloads_with_history(&self) -> Result<Vec<ObjectKey>, StoreError> {
        let mut out = std::collections::BTreeSet::new();
        for kv in self.inner.history.iter() {
            let (_, v) = kv.map_err(|e| self.err(e))?;
            out.insert(decode::<HistoryRecord>(&v)?.workload);
        }
        Ok(out.into_iter().collect())
    }

    /// The newest history record of a workload.
    pub fn last_history(&self, key: &ObjectKey) -> Result<Option<HistoryRecord>, StoreError> {
        match self.inner.history.scan_prefix(keys::history_prefix(key)?).next_back() {
            None => Ok(None),
            Some(kv) => {
                let (_, v) = kv.map_err(|e| self.err(e))?;
                Ok(Some(decode::<HistoryRecord>(&v)?))
            }
        }
    }

    // ---------------------------------------------------------------------------------------
    // Durability and size

    /// Makes every write so far durable (blocking fsync); returns the bytes flushed. Use it as a
    /// barrier before externally visible effects.
    pub fn flush(&self) -> Result<usize, StoreError> {
        self.writable("flush")?;
        self.inner.db.flush().map_err(|e| self.err(e))
    }

    // ---------------------------------------------------------------------------------------
    // Dry runs

    /// A handle on the same store that never writes it: it reads what the store holds, answers
    /// blob writes and snapshot recordings in memory (a blob written through it reads back
    /// through it; a snapshot gets the version a real write would give it), and refuses every
    /// other write with [`StoreError::DryRun`]. What `fedsched plan` previews a pass with, on the
    /// running daemon's store: the refusal makes a write that a preview should not make an
    /// error instead of a change.
    pub fn dry_run(&self) -> Store {
        Store { inner: Arc::clone(&self.inner), dry: Some(Arc::new(DryRun::default())) }
    }

    /// Whether this handle is a dry run ([`Store::dry_run`]).
    pub fn is_dry_run(&self) -> bool {
        self.dry.is_some()
    }

    /// `Err` on a dry-run handle: `what` would be written.
    pub(crate) fn writable(&self, what: &'static str) -> Result<(), StoreError> {
        match self.dry {
            Some(_) => Err(StoreError::DryRun { what }),
            None => Ok(()),
        }
    }

    /// [`Store::record_snapshot`] on a dry-run handle: the head's version when the content is
    /// the head's, else the next version (the same one for the same content again).
    fn dry_snapshot(&self, dry: &DryRun, name: &str, hash: u64) -> Result<(u64, bool), StoreError> {
        let mut heads = dry.heads.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(&(held, version)) = heads.get(name)
            && held == hash
        {
            return Ok((version, false));
        }
        let head = match self.inner.heads.get(name.as_bytes()).map_err(|e| self.err(e))? {
            Some(v) => Some(decode::<SnapshotMeta>(&v)?),
            None => None,
        };
        match head {
            Some(h) if h.hash == hash => Ok((h.version, false)),
            prev => {
                let version = prev
                    .map_or(Some(1), |p| p.version.checked_add(1))
                    .ok_or_else(|| StoreError::Inconsistent(format!("cluster {name}: version counter exhausted")))?;
                heads.insert(name.to_string(), (hash, version));
                Ok((version, true))
            }
        }
    }

    /// Bytes sled uses on disk.
    pub fn size_on_disk(&self) -> Result<u64, StoreError> {
        self.inner.db.size_on_disk().map_err(|e| self.err(e))
    }
}

/// What recording a snapshot computes from the snapshot alone, done beforehand (on the
/// workers, for a pass's many new members): its content hash and, when a new version is
/// expected, its encoded body. A body that is not needed is not written; one missing is
/// encoded by the store.
pub struct PreparedSnapshot {
    hash: u64,
    body: Option<Vec<u8>>,
}

impl PreparedSnapshot {
    /// The content hash of `snap` and, unless it is `head` (the stored head's hash), its body
    /// as recorded: `snap` with `freshness` (which is not content).
    pub fn of(
        snap: &ClusterSnapshot,
        head: Option<u64>,
        freshness: Option<crate::model::Freshness>,
    ) -> Result<PreparedSnapshot, StoreError> {
        let hash = snap.content_hash();
        let body = match head == Some(hash) {
            true => None,
            false => Some(encode(&ClusterSnapshot { freshness, ..snap.clone() })?),
        };
        Ok(PreparedSnapshot { hash, body })
    }

    /// The content hash of the snapshot it was prepared from.
    pub fn hash(&self) -> u64 {
        self.hash
    }
}

#[cfg(test)]
mod tests;
