//! Resolving a reader argument (a path, a folder or a glob; local, `s3://` or `hf://`) to a sorted file list.

use std::sync::Arc;

use futures::TryStreamExt;
use globset::GlobBuilder;
use object_store::path::Path;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};
use serde::{Deserialize, Serialize};
use url::Url;

use tokq_core::error::{Result, TokqError};
use super::pieces::Piece;
use crate::store::{object_path, store_url, to_url};

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FileRef {
    /// The file's URI, as written to `_source`.
    pub uri: String,
    pub size: u64,
    /// What changes when the file is rewritten, even at the same size: the ETag on S3, and on
    /// local disks the inode and modification time (the local store's ETag).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The part of the file to read, when it is split ([`super::pieces`]); the whole file if not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub piece: Option<Piece>,
}

impl FileRef {
    /// The file a listing found under the store-root `root` (`file://`, `s3://bucket`).
    pub fn from_meta(root: &str, meta: &ObjectMeta) -> Self {
        Self { uri: format!("{root}/{}", meta.location), size: meta.size, version: meta.e_tag.clone(), piece: None }
    }

    /// What the output, the journal and the counters know this input by: the file's URI, and
    /// for a piece the rows it holds (`file:///big.jsonl#rows=524288-1048576`).
    pub fn key(&self) -> String {
        match &self.piece {
            None => self.uri.clone(),
            Some(p) => format!("{}#rows={}-{}", self.uri, p.rows.0, p.rows.1),
        }
    }

    /// The bytes of the file this input reads.
    pub fn bytes(&self) -> u64 {
        self.piece.as_ref().map_or(self.size, |p| p.bytes)
    }

    pub fn url(&self) -> Result<Url> {
        to_url(&self.uri)
    }

    pub fn path(&self) -> Result<Path> {
        object_path(&self.uri)
    }
}

fn is_hidden(path: &Path) -> bool {
    path.parts().any(|p| p.as_ref().starts_with('.') || p.as_ref().starts_with('_'))
}

/// Lists the files that `location` names. Hidden files (`.x`, `_x`) under a folder are skipped,
/// which keeps tokq's own `_tokq_manifest.json` and staging files out of inputs.
pub async fn list(store: Arc<dyn ObjectStore>, location: &str) -> Result<Vec<FileRef>> {
    let io = |cause: String| TokqError::Io { uri: location.to_string(), cause };
    let url = to_url(location)?;
    let root = store_url(&url);
    let full = object_path(location)?;
    let full_text = full.as_ref();
    let glob_at = full_text.find(['*', '?', '[', '{']);
    let mut files = Vec::new();

    // A file is itself, even when its name has glob characters (`part[1].jsonl`).
    if let Ok(meta) = store.head(&full).await {
        return Ok(vec![FileRef::from_meta(&root, &meta)]);
    }
    // List from the last '/' before any glob character.
    // Taken literally, as the full path is: `~`, `#` or `%` in a folder name are that folder's.
    let dir_path = match glob_at {
        Some(at) => Path::parse(full_text[..at].rsplit_once('/').map(|(d, _)| d).unwrap_or("")).map_err(|e| io(e.to_string()))?,
        None => full.clone(),
    };
    let matcher = match glob_at {
        Some(_) => {
            let glob = GlobBuilder::new(full_text)
                .literal_separator(true)
                .build()
                .map_err(|e| io(format!("bad glob: {e}")))?;
            Some(glob.compile_matcher())
        }
        None => None,
    };
    let mut listing = store.list(Some(&dir_path));
    while let Some(meta) = listing.try_next().await.map_err(|e| io(e.to_string()))? {
        let keep = match &matcher {
            Some(m) => m.is_match(meta.location.as_ref()),
            None => !is_hidden(&relative(&meta.location, &dir_path)),
        };
        if keep {
            files.push(FileRef::from_meta(&root, &meta));
        }
    }
    files.sort_by(|a, b| a.uri.cmp(&b.uri));
    if files.is_empty() {
        return Err(TokqError::NoInput(location.to_string()));
    }
    if files.iter().all(|f| f.size == 0) {
        return Err(TokqError::EmptyInput(location.to_string()));
    }
    Ok(files)
}

fn relative(path: &Path, dir: &Path) -> Path {
    path.prefix_match(dir).map(Path::from_iter).unwrap_or_else(|| path.clone())
}

/// Assigns files (or pieces) to `n` partitions: largest first onto the least-loaded partition,
/// so that the assignment depends only on the file list.
pub fn assign(files: &[FileRef], n: usize) -> Vec<Vec<usize>> {
    let n = n.clamp(1, files.len().max(1));
    let mut order: Vec<usize> = (0..files.len()).collect();
    order.sort_by(|&a, &b| files[b].bytes().cmp(&files[a].bytes()).then(a.cmp(&b)));
    let mut groups = vec![Vec::new(); n];
    let mut load = vec![0u64; n];
    for i in order {
        let g = (0..n).min_by_key(|&g| (load[g], g)).unwrap_or(0);
        load[g] += files[i].bytes().max(1);
        groups[g].push(i);
    }
    for g in &mut groups {
        g.sort_unstable();
    }
    groups.retain(|g| !g.is_empty());
    groups
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::local::LocalFileSystem;

    fn touch(dir: &std::path::Path, name: &str, body: &str) {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, body).unwrap();
    }

    #[tokio::test]
    async fn lists_file_folder_and_glob() {
        let d = tempfile::tempdir().unwrap();
        touch(d.path(), "a.jsonl", "{}\n");
        touch(d.path(), "sub/b.jsonl", "{}\n");
        touch(d.path(), "c.txt", "x");
        touch(d.path(), "_tokq_manifest.json", "{}");
        let store: Arc<dyn ObjectStore> = Arc::new(LocalFileSystem::new());
        let root = d.path().to_str().unwrap();

        let one = list(store.clone(), &format!("{root}/a.jsonl")).await.unwrap();
        assert_eq!(one.len(), 1);
        assert!(one[0].uri.starts_with("file:///") && one[0].uri.ends_with("/a.jsonl"));

        let folder = list(store.clone(), root).await.unwrap();
        let names: Vec<_> = folder.iter().map(|f| f.uri.rsplit('/').next().unwrap()).collect();
        assert_eq!(names, vec!["a.jsonl", "c.txt", "b.jsonl"], "sorted by full path, hidden files skipped");

        let glob = list(store.clone(), &format!("{root}/*.jsonl")).await.unwrap();
        assert_eq!(glob.len(), 1);
        let deep = list(store.clone(), &format!("{root}/**/*.jsonl")).await.unwrap();
        assert_eq!(deep.len(), 2);

        // A glob under a folder whose name has characters object_store would escape.
        touch(d.path(), "a~#%1/x.jsonl", "{}\n");
        let odd = list(store.clone(), &format!("{root}/a~#%1/*.jsonl")).await.unwrap();
        assert!(odd.len() == 1 && odd[0].uri.ends_with("/a~#%1/x.jsonl"), "{odd:?}");

        let none = list(store.clone(), &format!("{root}/*.parquet")).await.unwrap_err();
        assert!(matches!(none, TokqError::NoInput(_)));
    }

    #[test]
    fn assignment_is_balanced_and_deterministic() {
        let files: Vec<FileRef> =
            [5u64, 1, 1, 1, 1, 1].iter().enumerate().map(|(i, &s)| FileRef { uri: i.to_string(), size: s, version: None, piece: None }).collect();
        assert_eq!(assign(&files, 2), vec![vec![0], vec![1, 2, 3, 4, 5]]);
        assert_eq!(assign(&files, 10).len(), 6);
    }
}
