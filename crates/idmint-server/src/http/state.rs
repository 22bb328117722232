//! What every handler shares: the ID service, the limits, the tokens and the metric
//! handles registered once.

use idmint_core::ErrorCode;
use std::ops::Deref;
use std::sync::Arc;

use idmint_core::Tag;
use metrics_exporter_prometheus::PrometheusHandle;

use super::errors::ApiError;
use super::params::Bounds;
use super::HttpOptions;
use crate::auth::Auth;
use crate::ids::Ids;
use crate::telemetry::Recorded;

/// The state of the router: cheap to clone (one `Arc`).
#[derive(Debug, Clone)]
pub(crate) struct AppState(Arc<Shared>);

#[derive(Debug)]
pub(crate) struct Shared {
    pub ids: Arc<Ids>,
    /// The tokens, checked by `access::require` when any is configured.
    pub auth: Arc<Auth>,
    pub max_count: u64,
    pub max_lease_size: u64,
    /// The ranges of the numeric query parameters, stated when one is refused.
    pub bounds: Bounds,
    pub prometheus: Option<PrometheusHandle>,
    pub recorded: Recorded,
    /// The tag `/readyz` looks up to see that the store answers (it need not exist).
    pub probe_tag: Option<Tag>,
}

impl AppState {
    pub(crate) fn new(ids: Arc<Ids>, options: HttpOptions) -> Self {
        let bounds = Bounds {
            max_count: options.max_count.max(1),
            max_lease_size: options.max_lease_size.max(1),
            max_shard: ids.layout().shard_count().saturating_sub(1),
            max_id: u64::MAX >> (64 - ids.layout().total_bits().clamp(1, 64)),
        };
        Self(Arc::new(Shared {
            ids,
            auth: options.auth,
            max_count: options.max_count.max(1),
            max_lease_size: options.max_lease_size.max(1),
            bounds,
            prometheus: options.metrics,
            recorded: Recorded::register(),
            probe_tag: Tag::new("idmint.readyz").ok(),
        }))
    }

    /// `count` (default 1) checked against `1..=max_count`.
    pub(crate) fn count(&self, count: Option<u64>) -> Result<u64, ApiError> {
        check_range(
            "count",
            ErrorCode::InvalidCount,
            count.unwrap_or(1),
            self.max_count,
        )
    }

    /// `size` (required) checked against `1..=max_lease_size`.
    pub(crate) fn lease_size(&self, size: Option<u64>) -> Result<u64, ApiError> {
        let size = size
            .ok_or_else(|| ApiError::new(ErrorCode::InvalidSize, "`size` is required: ?size=N"))?;
        check_range("size", ErrorCode::InvalidSize, size, self.max_lease_size)
    }
}

fn check_range(name: &'static str, code: ErrorCode, value: u64, max: u64) -> Result<u64, ApiError> {
    if (1..=max).contains(&value) {
        Ok(value)
    } else {
        Err(ApiError::new(
            code,
            format!("`{name}` must be in 1..={max}, got {value}"),
        ))
    }
}

impl Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}
