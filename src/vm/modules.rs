//! Kernel modules for distro kernels: which .ko files the guest must load, in which order, to get
//! the drivers it needs (virtio-pci and virtio-blk for the scratch disk). Dependencies come from
//! the tree's modules.dep when depmod has run, else from each module's own `.modinfo` section
//! ("depends=a,b"), which is what a linux-image .deb extracted without its postinst holds.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// The drivers the guest needs; where a kernel has them built in, nothing is loaded.
pub const WANTED: &[&str] = &["virtio_pci", "virtio_blk"];

/// A module's canonical name from its file name: "virtio-blk.ko.xz" -> "virtio_blk".
pub fn module_name(file: &str) -> String {
    let base = file.rsplit('/').next().unwrap_or(file);
    let stem = base.split(".ko").next().unwrap_or(base);
    stem.replace('-', "_")
}

/// Parses modules.dep ("kernel/a.ko: kernel/b.ko kernel/c.ko") into name -> (path, deps).
pub fn parse_modules_dep(text: &str) -> BTreeMap<String, (String, Vec<String>)> {
    let mut m = BTreeMap::new();
    for line in text.lines() {
        let Some((path, deps)) = line.split_once(':') else {
            continue;
        };
        let deps = deps.split_whitespace().map(module_name).collect();
        m.insert(module_name(path), (path.trim().to_string(), deps));
    }
    m
}

/// The "depends=" value of a module's .modinfo section (the strings are NUL-separated).
pub fn modinfo_depends(ko: &[u8]) -> Vec<String> {
    let key = b"\0depends=";
    let Some(pos) = ko.windows(key.len()).position(|w| w == key) else {
        return Vec::new();
    };
    let rest = &ko[pos + key.len()..];
    let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
    String::from_utf8_lossy(&rest[..end])
        .split(',')
        .filter(|s| !s.is_empty())
        .map(module_name)
        .collect()
}

/// Orders `wanted` and their dependencies so each module comes after what it depends on.
/// Wanted modules missing from `deps` are taken as built in and left out.
pub fn load_order(deps: &BTreeMap<String, (String, Vec<String>)>, wanted: &[&str]) -> Vec<String> {
    fn visit(
        n: &str,
        deps: &BTreeMap<String, (String, Vec<String>)>,
        seen: &mut Vec<String>,
        out: &mut Vec<String>,
    ) {
        if seen.iter().any(|s| s == n) {
            return;
        }
        seen.push(n.to_string());
        if let Some((_, ds)) = deps.get(n) {
            for d in ds {
                visit(d, deps, seen, out);
            }
            out.push(n.to_string());
        }
    }
    let (mut seen, mut out) = (Vec::new(), Vec::new());
    for w in wanted {
        visit(w, deps, &mut seen, &mut out);
    }
    out
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for e in std::fs::read_dir(dir).with_context(|| format!("read {}", dir.display()))? {
        let p = e?.path();
        if p.is_dir() {
            walk(&p, out)?;
        } else if p.to_string_lossy().contains(".ko") {
            out.push(p);
        }
    }
    Ok(())
}

/// Reads a module file, decompressing .xz / .zst / .gz with the host's tools.
pub fn read_module(path: &Path) -> Result<Vec<u8>> {
    let s = path.to_string_lossy();
    let tool = if s.ends_with(".xz") {
        Some(("xz", "-dc"))
    } else if s.ends_with(".zst") {
        Some(("zstd", "-dcq"))
    } else if s.ends_with(".gz") {
        Some(("gzip", "-dc"))
    } else {
        None
    };
    match tool {
        None => std::fs::read(path).with_context(|| format!("read {}", path.display())),
        Some((t, a)) => {
            let out = std::process::Command::new(t)
                .arg(a)
                .arg(path)
                .output()
                .with_context(|| format!("{t} {a} {} (install {t})", path.display()))?;
            if !out.status.success() {
                bail!(
                    "{t} {a} {}: {}",
                    path.display(),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            Ok(out.stdout)
        }
    }
}

/// Resolves the modules to load from a lib/modules/<release> tree: (name, path), in load order.
pub fn resolve(dir: &Path, wanted: &[&str]) -> Result<Vec<(String, PathBuf)>> {
    if !dir.is_dir() {
        bail!("--modules {}: not a directory", dir.display());
    }
    let dep_file = dir.join("modules.dep");
    let deps = if dep_file.is_file() {
        let text = std::fs::read_to_string(&dep_file)
            .with_context(|| format!("read {}", dep_file.display()))?;
        parse_modules_dep(&text)
    } else {
        let mut files = Vec::new();
        walk(dir, &mut files)?;
        if files.is_empty() {
            bail!(
                "--modules {}: no modules.dep and no .ko files (pass a lib/modules/<release> directory)",
                dir.display()
            );
        }
        let mut m = BTreeMap::new();
        for f in files {
            let rel = f
                .strip_prefix(dir)
                .unwrap_or(&f)
                .to_string_lossy()
                .to_string();
            let name = module_name(&rel);
            // Only read what can matter: virtio modules (the drivers and their dependencies).
            let ds = if name.starts_with("virtio") {
                modinfo_depends(&read_module(&f)?)
            } else {
                Vec::new()
            };
            m.insert(name, (rel, ds));
        }
        m
    };
    Ok(load_order(&deps, wanted)
        .into_iter()
        .map(|n| {
            let p = dir.join(&deps[&n].0);
            (n, p)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEP: &str = "kernel/drivers/block/virtio_blk.ko: kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/virtio/virtio_pci.ko: kernel/drivers/virtio/virtio_pci_legacy_dev.ko kernel/drivers/virtio/virtio_pci_modern_dev.ko kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/virtio/virtio.ko: kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/virtio/virtio_ring.ko:
kernel/drivers/virtio/virtio_pci_legacy_dev.ko:
kernel/drivers/virtio/virtio_pci_modern_dev.ko:
kernel/fs/ext4/ext4.ko: kernel/fs/jbd2/jbd2.ko
";

    #[test]
    fn dependencies_load_first_and_once() {
        let deps = parse_modules_dep(DEP);
        let order = load_order(&deps, WANTED);
        assert_eq!(
            order,
            [
                "virtio_pci_legacy_dev",
                "virtio_pci_modern_dev",
                "virtio_ring",
                "virtio",
                "virtio_pci",
                "virtio_blk"
            ]
        );
    }

    #[test]
    fn built_in_modules_are_left_out() {
        let deps = parse_modules_dep("kernel/x.ko:\n");
        assert!(load_order(&deps, WANTED).is_empty());
    }

    #[test]
    fn names_are_canonical() {
        assert_eq!(
            module_name("kernel/drivers/block/virtio-blk.ko.xz"),
            "virtio_blk"
        );
        assert_eq!(module_name("virtio_ring.ko"), "virtio_ring");
    }

    #[test]
    fn modinfo_depends_is_read() {
        let ko =
            b"\x7fELF....\0license=GPL\0depends=virtio,virtio_ring\0retpoline=Y\0name=virtio_blk\0";
        assert_eq!(modinfo_depends(ko), ["virtio", "virtio_ring"]);
        assert!(modinfo_depends(b"\0depends=\0name=virtio_ring\0").is_empty());
    }
}
