//! The journal of committed files. In the source layout each input file's output is final once
//! its part files are renamed into place; a small entry under `_tokq_journal/KEY/` then records
//! it. A rerun of the same statement (same KEY) trusts an entry whose input file has the recorded
//! size and version (ETag, or inode and modification time) and whose files are still there with
//! the recorded sha256, and does not read that input file again. The runner removes the journal
//! once the manifest is written.

use tokq_udfs::args::df;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use datafusion::error::Result;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::FileRecord;

pub const JOURNAL_DIR: &str = "_tokq_journal";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    pub source: String,
    /// An entry counts only while its input file has this size...
    pub source_size: u64,
    /// ...and this version (see `FileRef::version`).
    #[serde(default)]
    pub source_version: Option<String>,
    /// The bytes of the input file read, when it was read in pieces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub piece_bytes: Option<u64>,
    pub source_rows: u64,
    pub kept: Option<FileRecord>,
    pub rejects: Option<FileRecord>,
}

/// The journal folder of a run key.
pub fn folder(out_dir: &Path, run_key: &str) -> Path {
    out_dir.clone().join(JOURNAL_DIR).join(&hex::encode(Sha256::digest(run_key.as_bytes()))[..24])
}

pub async fn record(store: &Arc<dyn ObjectStore>, folder: &Path, part: &str, entry: &Entry) -> Result<()> {
    let body = serde_json::to_vec(entry).map_err(df)?;
    store.put(&folder.clone().join(format!("{part}.json").as_str()), PutPayload::from(body)).await.map_err(df)?;
    Ok(())
}

/// The file is in place with the recorded size and sha256: a part damaged since its commit (a
/// disk error, a file zeroed or truncated) is written again rather than listed as it was.
async fn intact(store: &Arc<dyn ObjectStore>, dir: &Path, record: &Option<FileRecord>) -> bool {
    let Some(r) = record else { return true };
    let Ok(got) = store.get(&dir.clone().join(r.path.as_str())).await else { return false };
    if got.meta.size != r.bytes {
        return false;
    }
    let mut hash = Sha256::new();
    let mut chunks = got.into_stream();
    while let Some(chunk) = chunks.next().await {
        match chunk {
            Ok(c) => hash.update(&c),
            Err(_) => return false,
        }
    }
    hex::encode(hash.finalize()) == r.sha256
}

/// Every entry under `folder`; one that cannot be read (a write cut short) is skipped.
async fn entries(store: &Arc<dyn ObjectStore>, folder: &Path) -> Result<Vec<Entry>> {
    let listed: Vec<_> = store.list(Some(folder)).try_collect().await.map_err(df)?;
    let mut entries = Vec::new();
    for meta in listed {
        let Ok(got) = store.get(&meta.location).await else { continue };
        let Ok(bytes) = got.bytes().await else { continue };
        if let Ok(entry) = serde_json::from_slice::<Entry>(&bytes) {
            entries.push(entry);
        }
    }
    Ok(entries)
}

/// Input bytes and rows whose output is committed under `folder` so far: how far a statement
/// has come where its reads happen elsewhere (the executors of a cluster).
pub async fn committed(store: &Arc<dyn ObjectStore>, folder: &Path) -> Result<(u64, u64)> {
    let entries = entries(store, folder).await?;
    Ok((entries.iter().map(|e| e.piece_bytes.unwrap_or(e.source_size)).sum(), entries.iter().map(|e| e.source_rows).sum()))
}

/// The committed entries, by input ([`crate::lineage::files::FileRef::key`]), whose files are all still in place and intact.
pub async fn read(
    store: &Arc<dyn ObjectStore>,
    folder: &Path,
    kept_dir: &Path,
    rejects: Option<(&Arc<dyn ObjectStore>, &Path)>,
) -> Result<BTreeMap<String, Entry>> {
    let mut intact_entries = BTreeMap::new();
    for entry in entries(store, folder).await? {
        let rejects_ok = match rejects {
            Some((s, d)) => intact(s, d, &entry.rejects).await,
            None => entry.rejects.is_none(),
        };
        if rejects_ok && intact(store, kept_dir, &entry.kept).await {
            intact_entries.insert(entry.source.clone(), entry);
        }
    }
    Ok(intact_entries)
}

/// The names of the part files that the journals under `out_dir` record, of any run: tokq's
/// own, whatever their bytes are now. (kept parts, rejected parts)
pub async fn recorded(store: &Arc<dyn ObjectStore>, out_dir: &Path) -> Result<(BTreeSet<String>, BTreeSet<String>)> {
    let (mut kept, mut rejects) = (BTreeSet::new(), BTreeSet::new());
    for e in entries(store, &out_dir.clone().join(JOURNAL_DIR)).await? {
        kept.extend(e.kept.map(|r| r.path));
        rejects.extend(e.rejects.map(|r| r.path));
    }
    Ok((kept, rejects))
}

/// Removes the journal of an output directory.
pub async fn clear(store: &Arc<dyn ObjectStore>, out_dir: &Path, location: &str) -> Result<()> {
    let folder = out_dir.clone().join(JOURNAL_DIR);
    let listed: Vec<_> = store.list(Some(&folder)).try_collect().await.map_err(df)?;
    for meta in listed {
        store.delete(&meta.location).await.map_err(df)?;
    }
    // Local folders outlive their files; object stores have none.
    if let Some(path) = crate::store::local_path(location) {
        let _ = std::fs::remove_dir_all(path.join(JOURNAL_DIR));
    }
    Ok(())
}
