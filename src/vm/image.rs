//! The host side of a VM's disks: the initramfs and the sparse ext4 scratch disk.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, anyhow, bail};

use super::{Options, guest, initramfs, modules, parse_ldd};

pub(super) fn build_initramfs(
    opts: &Options,
    cfg: &guest::GuestConfig,
    mods: &[(String, PathBuf)],
) -> Result<Vec<u8>> {
    let exe = std::env::current_exe().context("find this executable")?;
    let mut a = initramfs::Archive::new();
    let mut have = Vec::new();
    for d in [
        "dev",
        "proc",
        "sys",
        "run",
        "tmp",
        "scratch",
        "slow",
        "bin",
        "modules",
        "scenarios",
    ] {
        a.dir(d);
        have.push(d.to_string());
    }
    a.chardev("dev/console", 5, 1);
    a.file(
        "init",
        0o755,
        &std::fs::read(&exe).with_context(|| format!("read {}", exe.display()))?,
    );
    // A dynamically linked build brings its libraries (a static one has none).
    let ldd = Command::new("ldd").arg(&exe).output();
    if let Ok(out) = ldd
        && out.status.success()
    {
        for lib in parse_ldd(&String::from_utf8_lossy(&out.stdout)) {
            let data = std::fs::read(&lib).with_context(|| format!("read {lib}"))?;
            a.parents(&lib, &mut have);
            a.file(&lib, 0o755, &data);
        }
    }
    for (name, path) in mods {
        a.file(
            &format!("modules/{name}.ko"),
            0o644,
            &modules::read_module(path)?,
        );
    }
    if let Some(dir) = &opts.scenario_dir {
        for e in std::fs::read_dir(dir).with_context(|| format!("read {}", dir.display()))? {
            let p = e?.path();
            if p.extension().is_some_and(|x| x == "toml") {
                let name = p.file_name().unwrap().to_string_lossy().to_string();
                a.file(
                    &format!("scenarios/{name}"),
                    0o644,
                    &std::fs::read(&p).with_context(|| format!("read {}", p.display()))?,
                );
            }
        }
    }
    a.file(
        guest::CONFIG_PATH,
        0o644,
        serde_json::to_string(cfg)?.as_bytes(),
    );
    Ok(a.finish())
}

pub(super) fn make_disk(path: &Path, mib: u64) -> Result<()> {
    let f = std::fs::File::create(path).with_context(|| format!("create {}", path.display()))?;
    f.set_len(mib << 20)
        .with_context(|| format!("truncate {}", path.display()))?;
    let out = Command::new("mkfs.ext4")
        .args(["-q", "-F", "-L", "memcgtest"])
        .arg(path)
        .output()
        .map_err(|e| anyhow!("mkfs.ext4 (install e2fsprogs): {e}"))?;
    if !out.status.success() {
        bail!(
            "mkfs.ext4 {}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}
