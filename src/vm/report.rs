//! The `--report` directory of a VM run, rendered on the host from the typed report; the CSV
//! samples, which only the guest has, are copied out of the scratch disk, and the SVG timelines
//! drawn from them here (drawing them took a TCG guest 10 s of a quick suite).

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, anyhow, bail};

use crate::model::RunReport;

/// Writes the report directory `dest` from `rep`. When the guest completed its run
/// (`from_guest`), its own directory is copied out of the scratch disk first for the CSV
/// samples; then every text format, the SVG timelines (from the CSVs and `rep`) and index.html
/// are rendered. This happens in the work directory, so no stale file of
/// `dest` is read.
pub(super) fn write_report(
    rep: &RunReport,
    work: &Path,
    disk: &Path,
    from_guest: bool,
    dest: &Path,
) -> Result<()> {
    let dir = work.join("report");
    if from_guest && let Err(e) = extract_report(disk, &dir, work) {
        eprintln!("memcgtest vm: report: no CSV samples nor SVG timelines: {e:#}");
    }
    crate::report::write_dir(rep, &dir)?;
    copy_dir(&dir, dest)
}

/// Copies a directory tree (the report, and explore's cases below it).
fn copy_dir(src: &Path, dest: &Path) -> Result<()> {
    std::fs::create_dir_all(dest).with_context(|| format!("mkdir {}", dest.display()))?;
    let entries = std::fs::read_dir(src).with_context(|| format!("read {}", src.display()))?;
    for e in entries {
        let p = e.with_context(|| format!("read {}", src.display()))?.path();
        let to = dest.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_dir(&p, &to)?;
        } else {
            std::fs::copy(&p, &to).with_context(|| format!("copy to {}", to.display()))?;
        }
    }
    Ok(())
}

/// Copies the guest's report directory out of the ext4 image with debugfs (no mount needed).
fn extract_report(disk: &Path, dest: &Path, work: &Path) -> Result<()> {
    let tmp = work.join("report-out");
    std::fs::create_dir_all(&tmp).with_context(|| format!("mkdir {}", tmp.display()))?;
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
