//! An output directory that keeps work across runs (`series`, `mutate`): one run at a time in it,
//! each result written whole, and reused only by the binary that made it.

use std::path::Path;

use anyhow::{Context, Result};

use crate::model::error::Error;

/// One run at a time in an output directory: its builds and checkout are shared state.
pub fn lock(out: &Path) -> Result<nix::fcntl::Flock<std::fs::File>> {
    let p = out.join(".lock");
    let f = std::fs::File::create(&p).with_context(|| format!("create {}", p.display()))?;
    nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusiveNonblock).map_err(|_| {
        Error::Environment(format!(
            "another memcgtest run uses {} (it holds {})",
            out.display(),
            p.display()
        ))
        .into()
    })
}

/// This memcgtest binary, hashed: a result is reused only by the binary that judged it (another
/// version may check more, or differently).
pub fn binary_id() -> u64 {
    static ID: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *ID.get_or_init(|| {
        let bytes = std::fs::read("/proc/self/exe").unwrap_or_default();
        crate::model::kcidb::fnv1a(&bytes)
    })
}

/// A result saved by [`save`], or None when it is missing or unreadable (then it is made again).
pub fn load<T: serde::de::DeserializeOwned>(p: &Path) -> Option<T> {
    serde_json::from_str(&std::fs::read_to_string(p).ok()?).ok()
}

/// Writes `v` as JSON, through a temporary file: a run killed while writing leaves no half file.
pub fn save<T: serde::Serialize>(p: &Path, v: &T) -> Result<()> {
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).with_context(|| format!("mkdir {}", d.display()))?;
    }
    let tmp = p.with_extension("json.tmp");
    let text = serde_json::to_string_pretty(v)?;
    std::fs::write(&tmp, text).with_context(|| format!("write {}", tmp.display()))?;
    std::fs::rename(&tmp, p).with_context(|| format!("rename {}", tmp.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_run_in_a_locked_directory_is_an_environment_error() {
        let d = tempfile::tempdir().unwrap();
        let held = lock(d.path()).unwrap();
        let e = lock(d.path()).unwrap_err();
        assert!(
            matches!(e.downcast_ref::<Error>(), Some(Error::Environment(m)) if m.contains("another memcgtest run")),
            "{e:#}"
        );
        drop(held);
        lock(d.path()).unwrap();
    }

    #[test]
    fn saved_results_load_back_and_leave_no_temporary_file() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a/b.json");
        save(&p, &vec![1u32, 2, 3]).unwrap();
        assert_eq!(load::<Vec<u32>>(&p), Some(vec![1, 2, 3]));
        assert!(!p.with_extension("json.tmp").exists());
        assert_eq!(load::<Vec<u32>>(&d.path().join("none.json")), None);
    }
}
