//! The ids a run reports under in KernelCI's KCIDB (origin, checkout, build, run), decided when
//! the run starts and kept in its result (see `crate::report::kcidb` for the rest of the schema).

use serde::{Deserialize, Serialize};

use super::env::EnvInfo;

/// The default `--origin`.
pub const DEFAULT_ORIGIN: &str = "memcgtest";
/// The ids a run reports under; kept in the JSON result so a report can be re-rendered.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Ids {
    pub origin: String,
    pub checkout_id: String,
    pub build_id: String,
    /// Unique per run: the prefix of every test id.
    pub run_id: String,
}

impl Ids {
    /// Ids for a run on the kernel `env` describes, started at `started`. `origin` must match
    /// `[a-z0-9_]+`; `build_id` is used as given when it has an origin prefix (`origin:...`),
    /// else it is prefixed with the origin.
    pub fn new(
        origin: &str,
        build_id: Option<&str>,
        env: &EnvInfo,
        started: chrono::DateTime<chrono::Utc>,
    ) -> Ids {
        let checkout_id = format!("{origin}:{}", env.kernel);
        let build_id = match build_id {
            Some(b) if is_id(b) => b.to_string(),
            Some(b) => format!("{origin}:{b}"),
            None => format!(
                "{origin}:{}-{}-{:08x}",
                env.kernel,
                env.arch,
                fnv1a(&env.kernel_build) as u32
            ),
        };
        let cgroup = match &env.cgroup.selected {
            Ok(v) => v.as_str(),
            Err(_) => "none",
        };
        let run_id = format!(
            "{build_id}:{cgroup}:{}",
            started.format("%Y%m%dT%H%M%S%.3fZ")
        );
        Ids {
            origin: origin.to_string(),
            checkout_id,
            build_id,
            run_id,
        }
    }
}

/// Whether `s` is an origin as KCIDB wants it.
pub fn valid_origin(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// `origin:rest` with a valid origin.
fn is_id(s: &str) -> bool {
    s.split_once(':').is_some_and(|(o, _)| valid_origin(o))
}

/// FNV-1a, 64 bits: a stable hash for ids and keys on disk (std's hasher may change between
/// releases).
pub fn fnv1a(s: impl AsRef<[u8]>) -> u64 {
    s.as_ref().iter().fold(0xcbf29ce484222325, |h, b| {
        (h ^ *b as u64).wrapping_mul(0x100000001b3)
    })
}
