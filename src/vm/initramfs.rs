//! A writer (and, for tests and `--list`, a reader) of the "newc" cpio format the kernel unpacks
//! as its initramfs (Documentation/driver-api/early-userspace/buffer-format.rst): a 110-byte ASCII
//! header, the NUL-terminated name padded to 4 bytes, the data padded to 4 bytes, and a
//! "TRAILER!!!" entry at the end. Uncompressed, so any kernel with BLK_DEV_INITRD reads it.

use anyhow::{Result, bail};

const MAGIC: &str = "070701";
const TRAILER: &str = "TRAILER!!!";

/// File type bits of a cpio mode.
pub const S_IFDIR: u32 = 0o040000;
pub const S_IFREG: u32 = 0o100000;
pub const S_IFCHR: u32 = 0o020000;

/// An archive being written in memory.
pub struct Archive {
    buf: Vec<u8>,
    ino: u32,
}

/// One entry read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub mode: u32,
    pub data: Vec<u8>,
    pub rdev: (u32, u32),
}

fn pad4(buf: &mut Vec<u8>) {
    while !buf.len().is_multiple_of(4) {
        buf.push(0);
    }
}

impl Default for Archive {
    fn default() -> Self {
        Self::new()
    }
}

impl Archive {
    pub fn new() -> Archive {
        Archive {
            buf: Vec::new(),
            ino: 1,
        }
    }

    fn entry(&mut self, name: &str, mode: u32, data: &[u8], rdev: (u32, u32)) {
        let name = name.trim_start_matches('/');
        let fields = [
            self.ino,
            mode,
            0, // uid
            0, // gid
            if mode & 0o170000 == S_IFDIR { 2 } else { 1 },
            0, // mtime
            data.len() as u32,
            0, // devmajor
            0, // devminor
            rdev.0,
            rdev.1,
            name.len() as u32 + 1,
            0, // check
        ];
        self.ino += 1;
        self.buf.extend_from_slice(MAGIC.as_bytes());
        for f in fields {
            self.buf.extend_from_slice(format!("{f:08x}").as_bytes());
        }
        self.buf.extend_from_slice(name.as_bytes());
        self.buf.push(0);
        pad4(&mut self.buf);
        self.buf.extend_from_slice(data);
        pad4(&mut self.buf);
    }

    /// A directory (parents must be added first).
    pub fn dir(&mut self, path: &str) {
        self.entry(path, S_IFDIR | 0o755, &[], (0, 0));
    }

    /// A regular file with permission bits `perm`.
    pub fn file(&mut self, path: &str, perm: u32, data: &[u8]) {
        self.entry(path, S_IFREG | (perm & 0o7777), data, (0, 0));
    }

    /// A character device node, e.g. /dev/console (5, 1), so PID 1 has stdio before devtmpfs.
    pub fn chardev(&mut self, path: &str, major: u32, minor: u32) {
        self.entry(path, S_IFCHR | 0o600, &[], (major, minor));
    }

    /// Adds `path`'s parent directories that `have` does not list yet.
    pub fn parents(&mut self, path: &str, have: &mut Vec<String>) {
        let parts: Vec<&str> = path
            .trim_start_matches('/')
            .split('/')
            .filter(|p| !p.is_empty())
            .collect();
        for i in 1..parts.len() {
            let d = parts[..i].join("/");
            if !have.contains(&d) {
                self.dir(&d);
                have.push(d);
            }
        }
    }

    /// The archive with its trailer.
    pub fn finish(mut self) -> Vec<u8> {
        self.ino = 0;
        self.entry(TRAILER, 0, &[], (0, 0));
        self.buf
    }
}

fn hex(field: &[u8], what: &str) -> Result<u32> {
    let s = std::str::from_utf8(field)?;
    u32::from_str_radix(s, 16).map_err(|e| anyhow::anyhow!("bad {what} field {s:?}: {e}"))
}

/// Reads an archive back (entries before the trailer).
pub fn list(data: &[u8]) -> Result<Vec<Entry>> {
    let mut out = Vec::new();
    let mut off = 0usize;
    loop {
        if off + 110 > data.len() {
            bail!("truncated header at offset {off}");
        }
        let h = &data[off..off + 110];
        if &h[..6] != MAGIC.as_bytes() {
            bail!("bad magic at offset {off}");
        }
        let f = |i: usize, what: &str| hex(&h[6 + i * 8..6 + (i + 1) * 8], what);
        let mode = f(1, "mode")?;
        let size = f(6, "filesize")? as usize;
        let rdev = (f(9, "rdevmajor")?, f(10, "rdevminor")?);
        let namesize = f(11, "namesize")? as usize;
        let name_start = off + 110;
        if name_start + namesize > data.len() || namesize == 0 {
            bail!("truncated name at offset {off}");
        }
        let name = String::from_utf8(data[name_start..name_start + namesize - 1].to_vec())?;
        let data_start = (name_start + namesize).next_multiple_of(4);
        if data_start + size > data.len() {
            bail!("truncated data of {name}");
        }
        if name == TRAILER {
            return Ok(out);
        }
        out.push(Entry {
            name,
            mode,
            data: data[data_start..data_start + size].to_vec(),
            rdev,
        });
        off = (data_start + size).next_multiple_of(4);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_what_it_reads_back() {
        let mut a = Archive::new();
        let mut have = Vec::new();
        a.parents("/lib/x86_64-linux-gnu/libc.so.6", &mut have);
        a.file("/lib/x86_64-linux-gnu/libc.so.6", 0o755, b"abcde");
        a.dir("dev");
        a.chardev("/dev/console", 5, 1);
        a.file("vm.json", 0o644, b"{}");
        let bytes = a.finish();
        assert_eq!(bytes.len() % 4, 0);
        let e = list(&bytes).unwrap();
        let names: Vec<&str> = e.iter().map(|x| x.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "lib",
                "lib/x86_64-linux-gnu",
                "lib/x86_64-linux-gnu/libc.so.6",
                "dev",
                "dev/console",
                "vm.json"
            ]
        );
        assert_eq!(e[2].data, b"abcde");
        assert_eq!(e[2].mode, S_IFREG | 0o755);
        assert_eq!(e[4].rdev, (5, 1));
        assert_eq!(e[4].mode & S_IFCHR, S_IFCHR);
    }

    #[test]
    fn cpio_tool_agrees() {
        // The archive is what GNU cpio itself lists, when it is installed.
        let Ok(out) = std::process::Command::new("cpio").arg("--version").output() else {
            return;
        };
        if !out.status.success() {
            return;
        }
        let mut a = Archive::new();
        a.dir("etc");
        a.file("etc/x", 0o644, b"hello\n");
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.cpio");
        std::fs::write(&p, a.finish()).unwrap();
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("cpio -it < {}", p.display()))
            .output()
            .unwrap();
        assert!(out.status.success());
        assert_eq!(String::from_utf8_lossy(&out.stdout), "etc\netc/x\n");
    }

    #[test]
    fn rejects_garbage() {
        assert!(list(b"not a cpio archive at all, but long enough to hold one header of 110 bytes ....................................").is_err());
    }
}
