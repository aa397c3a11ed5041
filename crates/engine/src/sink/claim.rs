//! A COPY's claim on its target directory, taken before anything in it changes: one writer at a
//! time (a lock file, created only if absent, so that the second run fails at once and names the
//! first), and only its own recipe's output replaced: a folder holding files tokq did not write,
//! or the output of another recipe, is refused unless the COPY says `'overwrite' 'true'` (or the
//! run `--overwrite`), as DuckDB and Spark refuse to write over what is there.

// parquet 59 deprecates ParquetObjectReader; DataFusion 55's own Parquet scan still builds on it.
#![allow(deprecated)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use datafusion::error::{DataFusionError, Result};
use datafusion::parquet::arrow::async_reader::ParquetObjectReader;
use datafusion::parquet::arrow::ParquetRecordBatchStreamBuilder;
use object_store::path::Path;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};
use serde::{Deserialize, Serialize};
use tokq_udfs::args::df;

use super::exec::WRITER;
use super::journal::JOURNAL_DIR;
use super::manifest::{Manifest, RecipeId, FORMAT_KEY, LEGACY_MANIFEST_NAME, MANIFEST_NAME};
use super::is_unfinished;

/// The lock's file name in a target directory.
pub const LOCK_NAME: &str = "_tokq_lock.json";

/// Who holds a target.
#[derive(Debug, Serialize, Deserialize)]
struct Holder {
    /// `host pid N`, as the files a process writes report it.
    writer: String,
    /// Seconds since the Unix epoch when the lock was taken.
    since: u64,
}

/// What reading a lock file found.
enum Read {
    Holder(Holder),
    /// Bytes that name no holder.
    Damaged,
    /// No bytes: gone since, or the store failed.
    Failed,
}

/// A held target: [`Claim::release`] removes the lock.
pub struct Claim {
    store: Arc<dyn ObjectStore>,
    lock: Path,
    released: bool,
    /// The local target folder, when taking the lock made it: a COPY that fails before writing
    /// (refused by a cluster's roots, a planning error) leaves no empty folder behind.
    made: Option<std::path::PathBuf>,
}

/// Locks this process dropped without releasing them: their COPY was cancelled while the process
/// lives on (Ctrl-C in `tokq.run` from Python drops the run). Their holder is this very process,
/// which looks alive, so a rerun here takes them over by this mark instead of by [`gone`]. With
/// the mark, the deletion the drop started: a rerun waits for it, or it could delete the lock
/// the rerun has just taken.
static ABANDONED: Mutex<BTreeMap<String, Option<tokio::task::JoinHandle<()>>>> = Mutex::new(BTreeMap::new());

fn abandoned_locks() -> std::sync::MutexGuard<'static, BTreeMap<String, Option<tokio::task::JoinHandle<()>>>> {
    ABANDONED.lock().unwrap_or_else(|p| p.into_inner())
}

/// Waits for the lock deletions that dropped claims started: a process that ends right after a
/// COPY was stopped (Ctrl-C) leaves no lock behind for its rerun to take over.
pub async fn settle_abandoned() {
    let pending: Vec<_> = abandoned_locks().values_mut().filter_map(Option::take).collect();
    for deletion in pending {
        let _ = deletion.await;
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        // Best effort, so that no lock is left behind if nothing reruns; a rerun does not rely on it.
        let deletion = tokio::runtime::Handle::try_current().ok().map(|runtime| {
            let (store, lock) = (Arc::clone(&self.store), self.lock.clone());
            runtime.spawn(async move {
                let _ = store.delete(&lock).await;
            })
        });
        abandoned_locks().insert(self.key(), deletion);
    }
}

impl Claim {
    /// Locks `dir` (the COPY target `location`), then checks that every file in it is tokq's
    /// (`recorded`: the part files a journal names) and that its committed output, if any, is
    /// `recipe`'s; with `overwrite`, files that are not tokq's are deleted instead, and another
    /// recipe's output is replaced.
    pub async fn take(store: &Arc<dyn ObjectStore>, dir: &Path, location: &str, recorded: &BTreeSet<String>, recipe: &RecipeId, overwrite: bool) -> Result<Self> {
        let lock = dir.clone().join(LOCK_NAME);
        let made = crate::store::local_path(location).filter(|d| !d.exists());
        let mut claim = Self { store: Arc::clone(store), lock: lock.clone(), released: false, made };
        let deletion = abandoned_locks().get_mut(&claim.key()).and_then(Option::take);
        if let Some(deletion) = deletion {
            // Cancelled with its runtime or failed: the lock is then still there, and the mark takes it over.
            let _ = deletion.await;
        }
        if !claim.try_lock().await? {
            let (holder, damaged) = match claim.holder().await {
                Read::Holder(h) => (Some(h), false),
                Read::Damaged => (None, true),
                Read::Failed => (None, false),
            };
            let ours_abandoned = holder.as_ref().is_none_or(|h| h.writer == *WRITER) && claim.abandoned();
            let stale = ours_abandoned || damaged || holder.as_ref().is_some_and(gone);
            if !stale || !claim.retake().await? {
                claim.released = true; // not ours to remove
                let who = holder.map_or("a run whose lock cannot be read".to_string(), |h| {
                    format!("{}, holding it for {} s", h.writer, now_secs().saturating_sub(h.since))
                });
                return Err(DataFusionError::Execution(format!(
                    "output '{location}' is being written by another tokq run ({who}); wait for it to finish, or, \
                     if that run is gone, delete {LOCK_NAME} in that folder"
                )));
            }
            if damaged {
                log::warn!("took over the lock of output '{location}': its {LOCK_NAME} named no run (empty or cut short)");
            } else if let Some(h) = holder.filter(|h| gone(h)) {
                log::warn!("took over the lock of output '{location}' from {}, which is no longer running", h.writer);
            }
        }
        let mut checked = match overwrite {
            true => Ok(()),
            false => committed(store, dir).await.map_or(Ok(()), |(m, meta)| not_anothers(location, recipe, &m, &meta)),
        };
        if checked.is_ok() {
            checked = foreign_files(store, dir, location, recorded, overwrite).await;
        }
        if let Err(e) = checked {
            claim.release().await?;
            return Err(e);
        }
        Ok(claim)
    }

    /// Where this lock is, across stores.
    fn key(&self) -> String {
        format!("{}/{}", self.store, self.lock)
    }

    /// Whether this process abandoned this lock; the mark is used once.
    fn abandoned(&self) -> bool {
        abandoned_locks().remove(&self.key()).is_some()
    }

    /// Creates the lock file if there is none.
    async fn try_lock(&self) -> Result<bool> {
        let body = serde_json::to_vec(&Holder { writer: WRITER.clone(), since: now_secs() }).map_err(df)?;
        let create = PutOptions { mode: PutMode::Create, ..Default::default() };
        match self.store.put_opts(&self.lock, PutPayload::from(body), create).await {
            Ok(_) => {
                self.abandoned(); // a lock taken afresh is nobody's abandoned one
                Ok(true)
            }
            Err(object_store::Error::AlreadyExists { .. } | object_store::Error::Precondition { .. }) => Ok(false),
            Err(e) => Err(df(e)),
        }
    }

    /// What the lock file says. A lock is written whole or not at all (the stores create it
    /// atomically), so bytes that are no holder (an empty file, a truncated one) are a lock that
    /// no live run holds: a disk that filled up, a file a person made. A read that fails says
    /// nothing about its holder.
    async fn holder(&self) -> Read {
        let bytes = match self.store.get(&self.lock).await {
            Ok(got) => got.bytes().await,
            Err(e) => Err(e),
        };
        match bytes {
            Ok(bytes) => serde_json::from_slice(&bytes).map_or(Read::Damaged, Read::Holder),
            Err(_) => Read::Failed,
        }
    }

    /// Takes over a lock whose process is gone (a run killed on this host).
    async fn retake(&self) -> Result<bool> {
        match self.store.delete(&self.lock).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => self.try_lock().await,
            Err(e) => Err(df(e)),
        }
    }

    pub async fn release(mut self) -> Result<()> {
        self.released = true;
        match self.store.delete(&self.lock).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => {
                // Only an empty folder goes: one that the COPY wrote nothing into.
                if let Some(dir) = &self.made {
                    let _ = std::fs::remove_dir(dir);
                }
                Ok(())
            }
            Err(e) => Err(df(e)),
        }
    }
}

fn now_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The lock's process ran on this host and is no longer running. A lock from another host is
/// never judged stale: only its own host can tell; nor is any where `/proc` does not list
/// processes (macOS), where a missing `/proc/PID` says nothing.
fn gone(holder: &Holder) -> bool {
    let Some((host, pid)) = holder.writer.rsplit_once(" pid ") else { return false };
    let Some((this_host, _)) = WRITER.rsplit_once(" pid ") else { return false };
    let proc = std::path::Path::new("/proc");
    host == this_host
        && proc.join("self").exists()
        && pid.parse::<u32>().is_ok_and(|pid| !proc.join(pid.to_string()).exists())
}

/// Refuses a target holding files that tokq did not write, or deletes them with `overwrite`.
/// tokq's own: its manifest, lock, journal and unfinished files by name, and part files the
/// manifest or a journal lists or whose footer carries tokq's format key (those of an
/// interrupted run).
async fn foreign_files(store: &Arc<dyn ObjectStore>, dir: &Path, location: &str, recorded: &BTreeSet<String>, overwrite: bool) -> Result<()> {
    let listed = match store.list_with_delimiter(Some(dir)).await {
        Ok(l) => l,
        Err(object_store::Error::NotFound { .. }) => return Ok(()),
        Err(e) => return Err(df(e)),
    };
    let listed_parts: Vec<String> = committed(store, dir).await.map_or(Vec::new(), |(m, _)| m.files.into_iter().map(|f| f.path).collect());
    let mut foreign = Vec::new();
    for meta in listed.objects {
        let Some(name) = meta.location.filename().map(str::to_string) else { continue };
        let own = name == MANIFEST_NAME
            || name == LEGACY_MANIFEST_NAME
            || name == LOCK_NAME
            || is_unfinished(&name)
            || (name.starts_with("part-")
                && name.ends_with(".parquet")
                && (listed_parts.contains(&name) || recorded.contains(&name) || written_by_tokq(store, &meta).await));
        if !own {
            foreign.push((name, meta));
        }
    }
    let folders = listed.common_prefixes.iter().filter_map(|p| p.filename()).filter(|&f| f != JOURNAL_DIR).map(|f| format!("{f}/"));
    let names: Vec<String> = foreign.iter().map(|(n, _)| n.clone()).chain(if overwrite { Vec::new() } else { folders.collect() }).collect();
    if names.is_empty() {
        return Ok(());
    }
    if !overwrite {
        let more = if names.len() > 1 { format!(" and {} more", names.len() - 1) } else { String::new() };
        return Err(DataFusionError::Plan(format!(
            "COPY target '{location}' holds files tokq did not write ({}{more}); write to an empty or new folder, \
             or add OPTIONS ('overwrite' 'true') to delete them first",
            names[0]
        )));
    }
    // The user asked for it: files beside the output go; folders are not part of it and stay.
    for (_, meta) in foreign {
        store.delete(&meta.location).await.map_err(df)?;
    }
    Ok(())
}

/// The target's manifest, and when it was written, if it has one.
async fn committed(store: &Arc<dyn ObjectStore>, dir: &Path) -> Option<(Manifest, ObjectMeta)> {
    let got = store.get(&dir.clone().join(MANIFEST_NAME)).await.ok()?;
    let meta = got.meta.clone();
    Manifest::decode(got.bytes().await.ok()?).ok().map(|m| (m, meta))
}

/// Refuses to replace `m` (at `location`, written at `meta`'s time) when another recipe made it:
/// a COPY whose target holds another recipe's output would replace it without a word.
pub(super) fn not_anothers(location: &str, recipe: &RecipeId, m: &Manifest, meta: &ObjectMeta) -> Result<()> {
    if !recipe.differs(m) {
        return Ok(());
    }
    Err(DataFusionError::Plan(format!(
        "COPY target '{location}' holds the output of another recipe ({}: {} rows, {} tokens, written {}); \
         write to another folder, or replace it with OPTIONS ('overwrite' 'true') or --overwrite",
        RecipeId::describe(m),
        m.rows,
        m.tokens,
        meta.last_modified.format("%Y-%m-%d %H:%M UTC")
    )))
}

/// A Parquet file whose footer carries tokq's format key.
async fn written_by_tokq(store: &Arc<dyn ObjectStore>, meta: &ObjectMeta) -> bool {
    let reader = ParquetObjectReader::new(Arc::clone(store), meta.location.clone()).with_file_size(meta.size);
    let Ok(builder) = ParquetRecordBatchStreamBuilder::new(reader).await else { return false };
    let kv = builder.metadata().file_metadata().key_value_metadata();
    kv.is_some_and(|kv| kv.iter().any(|e| e.key == FORMAT_KEY))
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::local::LocalFileSystem;

    #[tokio::test]
    async fn a_lock_dropped_by_a_cancelled_copy_is_taken_over_in_this_process_and_a_held_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn ObjectStore> = Arc::new(LocalFileSystem::new_with_prefix(dir.path()).unwrap());
        let (target, none) = (Path::from("out"), BTreeSet::new());
        let recipe = RecipeId { origin: "r.sql".into(), source_sha256: "1".repeat(64), sha256: "0".repeat(64) };
        let take = || Claim::take(&store, &target, "out", &none, &recipe, false);
        let held = take().await.unwrap();
        let err = take().await.err().unwrap().to_string();
        assert!(err.contains("being written by another tokq run"), "{err}");
        drop(held); // as a cancelled COPY's future drops it
        let again = take().await.unwrap();
        assert!(take().await.is_err(), "the mark is used once: a lock held again is refused");
        again.release().await.unwrap();
        assert!(store.head(&target.join(LOCK_NAME)).await.is_err());
    }
}
