//! The folders earlier COPY statements of an explained recipe would write, with their schemas.
//! `tokq explain` writes nothing, so a later `read_parquet` of such a folder finds no files; with
//! this registry in the session it plans over an empty table of the schema the COPY would give,
//! and the statements after it (a view over a stage's output, as `dedup.sql` has) are planned too.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::prelude::SessionContext;

use crate::store::to_url;

/// Folder URL (without a trailing `/`) to the schema a COPY would write there.
#[derive(Debug, Default)]
pub struct PlannedOutputs(Mutex<BTreeMap<String, SchemaRef>>);

fn folder_key(location: &str) -> Option<String> {
    Some(to_url(location).ok()?.as_str().trim_end_matches('/').to_string())
}

impl PlannedOutputs {
    /// Puts an empty registry into the context's session, for explaining.
    pub fn install(ctx: &SessionContext) -> Arc<Self> {
        let planned = Arc::new(Self::default());
        ctx.state_ref().write().config_mut().set_extension(Arc::clone(&planned));
        planned
    }

    /// Records that `location` would hold files of `schema`.
    pub fn add(&self, location: &str, schema: SchemaRef) {
        if let Some(key) = folder_key(location) {
            self.0.lock().unwrap_or_else(|p| p.into_inner()).insert(key, schema);
        }
    }

    /// The schema of the planned folder that `location` reads: the folder itself, or a glob or
    /// file inside it (`out/x/`, `out/x/*.parquet`).
    pub fn schema_of(&self, location: &str) -> Option<SchemaRef> {
        let key = folder_key(location)?;
        let map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        map.iter().find(|(dir, _)| key.strip_prefix(dir.as_str()).is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))).map(|(_, s)| Arc::clone(s))
    }
}
