//! The journal of committed files. In the source layout each input file's output is final once
//! its part files are renamed into place; a small entry under `_tokq_journal/KEY/` then records
//! it. A rerun of the same statement (same KEY) trusts an entry whose input file has the recorded
//! size and whose files are still there with theirs, and does not read that input file again. The
//! runner removes the journal once the manifest is written.

use tokq_udfs::args::df;
use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::error::Result;
use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{FileRecord};

pub const JOURNAL_DIR: &str = "_tokq_journal";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    pub source: String,
    /// An entry counts only while its input file has this size.
    pub source_size: u64,
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

async fn still_there(store: &Arc<dyn ObjectStore>, dir: &Path, record: &Option<FileRecord>) -> bool {
    match record {
        None => true,
        Some(r) => store.head(&dir.clone().join(r.path.as_str())).await.is_ok_and(|m| m.size == r.bytes),
    }
}

/// The committed entries, by source, whose files are all still in place.
pub async fn read(
    store: &Arc<dyn ObjectStore>,
    folder: &Path,
    kept_dir: &Path,
    rejects: Option<(&Arc<dyn ObjectStore>, &Path)>,
) -> Result<BTreeMap<String, Entry>> {
    let listed: Vec<_> = store.list(Some(folder)).try_collect().await.map_err(df)?;
    let mut entries = BTreeMap::new();
    for meta in listed {
        let Ok(got) = store.get(&meta.location).await else { continue };
        let Ok(bytes) = got.bytes().await else { continue };
        let Ok(entry) = serde_json::from_slice::<Entry>(&bytes) else { continue };
        let rejects_ok = match rejects {
            Some((s, d)) => still_there(s, d, &entry.rejects).await,
            None => entry.rejects.is_none(),
        };
        if rejects_ok && still_there(store, kept_dir, &entry.kept).await {
            entries.insert(entry.source.clone(), entry);
        }
    }
    Ok(entries)
}

/// Removes the journal of an output directory.
pub async fn clear(store: &Arc<dyn ObjectStore>, out_dir: &Path, location: &str) -> Result<()> {
    let folder = out_dir.clone().join(JOURNAL_DIR);
    let listed: Vec<_> = store.list(Some(&folder)).try_collect().await.map_err(df)?;
    for meta in listed {
        store.delete(&meta.location).await.map_err(df)?;
    }
    // Local folders outlive their files; object stores have none.
    if let Some(path) = crate::store::to_url(location).ok().and_then(|u| u.to_file_path().ok()) {
        let _ = std::fs::remove_dir_all(path.join(JOURNAL_DIR));
    }
    Ok(())
}
