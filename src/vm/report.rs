//! The guest's report directory on the host: copied out of the scratch disk, and splat
//! verdicts applied to it.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, anyhow, bail};

use super::console;

/// Fails the scenarios a kernel splat happened in, in every file of the guest's report
/// directory: results.json is read back, the scenarios marked failed, and every file is
/// re-rendered from it (the SVG timelines keep their samples and get the new status). Returns the
/// results as the guest printed them, in `format`, so stdout and the report directory agree.
pub(super) fn rewrite_report(
    dir: &Path,
    failed: &[(String, String)],
    format: &str,
) -> Result<String> {
    use clap::ValueEnum;
    let p = dir.join("results.json");
    let text = std::fs::read_to_string(&p).with_context(|| format!("read {}", p.display()))?;
    let mut rep: crate::model::RunReport =
        serde_json::from_str(&text).with_context(|| format!("parse {}", p.display()))?;
    rep.fail(failed);
    crate::report::write_dir(&rep, dir)?;
    let format = crate::report::Format::from_str(format, false)
        .map_err(|e| anyhow!("--format {format}: {e}"))?;
    Ok(crate::report::render(&rep, format))
}

pub(super) fn copy_dir(src: &Path, dest: &Path) -> Result<()> {
    std::fs::create_dir_all(dest).with_context(|| format!("mkdir {}", dest.display()))?;
    for e in std::fs::read_dir(src)? {
        let p = e?.path();
        let to = dest.join(p.file_name().unwrap());
        std::fs::copy(&p, &to).with_context(|| format!("copy to {}", to.display()))?;
    }
    Ok(())
}

/// Copies the guest's report directory out of the ext4 image with debugfs (no mount needed).
pub(super) fn extract_report(disk: &Path, dest: &Path, work: &Path) -> Result<()> {
    let tmp = work.join("report-out");
    std::fs::create_dir_all(&tmp)?;
    let out = Command::new("debugfs")
        .arg("-R")
        .arg(format!("rdump /report {}", tmp.display()))
        .arg(disk)
        .output()
        .map_err(|e| anyhow!("debugfs (install e2fsprogs): {e}"))?;
    let src = tmp.join("report");
    if !src.is_dir() {
        bail!(
            "the guest wrote no report ({})",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    copy_dir(&src, dest)
}

/// Writes the splat verdict into the copied report directory too: results.ktap and results.json
/// say `fail` for the scenarios a kernel splat failed, as stdout does.
pub(super) fn fail_in_report_dir(dir: &Path, failed: &[(String, String)]) -> Result<()> {
    if failed.is_empty() {
        return Ok(());
    }
    let ktap = dir.join("results.ktap");
    if let Ok(t) = std::fs::read_to_string(&ktap) {
        std::fs::write(&ktap, console::fail_in_ktap(&t, failed))
            .with_context(|| format!("write {}", ktap.display()))?;
    }
    let json = dir.join("results.json");
    if let Ok(t) = std::fs::read_to_string(&json) {
        let out = console::fail_in_json(&t, failed)
            .ok_or_else(|| anyhow!("{}: not a memcgtest result", json.display()))?;
        std::fs::write(&json, out).with_context(|| format!("write {}", json.display()))?;
    }
    Ok(())
}
