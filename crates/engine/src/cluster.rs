//! What every Ballista node shares, and the client of `tokq run --cluster`. Every node gets the
//! same config producer (tokq options), the same functions (built from the same session state)
//! and the same plan codecs, so plans decode identically everywhere. The CLI starts the
//! scheduler and executor processes over these.

use std::sync::Arc;

use anyhow::Context;
use ballista::prelude::SessionContextExt;
use ballista_core::extension::SessionConfigExt;
use ballista_core::serde::{BallistaLogicalExtensionCodec, BallistaPhysicalExtensionCodec};
use datafusion::execution::SessionState;
use datafusion::prelude::{SessionConfig, SessionContext};
use crate::codec::{TokqLogicalCodec, TokqPhysicalCodec};

use crate::session::{base_state, local_context, with_tokq};

/// tokq's logical codec over Ballista's.
pub fn logical_codec() -> Arc<TokqLogicalCodec> {
    Arc::new(TokqLogicalCodec::new(Arc::new(BallistaLogicalExtensionCodec::default())))
}

/// tokq's physical codec over Ballista's.
pub fn physical_codec() -> Arc<TokqPhysicalCodec> {
    Arc::new(TokqPhysicalCodec::new(Arc::new(BallistaPhysicalExtensionCodec::default())))
}

/// The config every node starts from.
pub fn cluster_config() -> SessionConfig {
    with_tokq(
        SessionConfig::new_with_ballista()
            .with_ballista_logical_extension_codec(logical_codec())
            .with_ballista_physical_extension_codec(physical_codec()),
    )
}

/// The scheduler's session: tokq functions on top of the client's settings.
pub fn cluster_state(config: SessionConfig) -> datafusion::error::Result<SessionState> {
    Ok(local_context(config)?.state())
}

/// A client context for `tokq run --cluster df://HOST:PORT`; `config` starts from [`cluster_config`].
pub async fn remote_context(url: &str, config: SessionConfig) -> anyhow::Result<SessionContext> {
    let ctx = SessionContext::remote_with_state(url, base_state(config)?)
        .await
        .with_context(|| format!("cannot connect to the scheduler at {url}"))?;
    // Ballista's upgrade replaces the function list, so tokq's functions are added afterwards.
    crate::register_all(&ctx);
    Ok(ctx)
}
