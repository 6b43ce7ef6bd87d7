//! Building each commit of a series: one build directory (`make O=`) for all of them, so each
//! build is incremental on the one before; configured as ci/build-kernel.sh does (tinyconfig,
//! the project's fragment and the user's merged on top, olddefconfig), again at every commit (a
//! patch may change the Kconfig files), and every option of the fragments checked.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, anyhow};
use serde::{Deserialize, Serialize};

/// The project's fragment (ci/kernel.config): what the suite needs of a kernel.
pub const PROJECT_FRAGMENT: &str = include_str!("../../ci/kernel.config");

/// How a commit's build ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "build", rename_all = "kebab-case")]
pub enum Built {
    /// The image, and how long the build took.
    Image { image: PathBuf, seconds: f64 },
    /// The compiler's (or make's, or Kconfig's) error lines and the whole log.
    Failed {
        errors: Vec<String>,
        log: PathBuf,
        seconds: f64,
    },
}

/// The kernel build of a series: its source checkout, build directory and fragments.
pub struct Builder {
    pub src: PathBuf,
    pub build: PathBuf,
    /// The fragments' text, merged in order (the project's first).
    pub fragments: Vec<(String, String)>,
    pub jobs: usize,
}

impl Builder {
    /// What the fragments say, hashed: images and configurations are keyed by it.
    pub fn stamp(&self) -> String {
        let text: String = self.fragments.iter().map(|(_, t)| t.as_str()).collect();
        format!("{:016x}", crate::model::kcidb::fnv1a(&text))
    }

    /// Builds the commit checked out in `src` into `dir` (dir/bzImage, dir/build.log).
    pub fn build(&self, dir: &Path) -> Result<Built> {
        std::fs::create_dir_all(dir).with_context(|| format!("mkdir {}", dir.display()))?;
        let log = dir.join("build.log");
        let start = Instant::now();
        let mut text = String::new();
        self.configure(&mut text)?;
        let (ok, out) = self.make(&["olddefconfig"])?;
        text.push_str(&out);
        let options = self.options_set();
        if let Err(missing) = &options {
            text.push_str(missing);
        }
        if !ok || options.is_err() {
            return self.failed(&text, &log, start);
        }
        let (ok, out) = self.make(&["bzImage"])?;
        text.push_str(&out);
        if !ok {
            return self.failed(&text, &log, start);
        }
        std::fs::write(&log, &text).with_context(|| format!("write {}", log.display()))?;
        let image = dir.join("bzImage");
        let made = self.build.join("arch/x86/boot/bzImage");
        std::fs::copy(&made, &image)
            .with_context(|| format!("copy {} to {}", made.display(), image.display()))?;
        Ok(Built::Image {
            image,
            seconds: start.elapsed().as_secs_f64(),
        })
    }

    fn failed(&self, text: &str, log: &Path, start: Instant) -> Result<Built> {
        std::fs::write(log, text).with_context(|| format!("write {}", log.display()))?;
        Ok(Built::Failed {
            errors: error_lines(text),
            log: log.to_path_buf(),
            seconds: start.elapsed().as_secs_f64(),
        })
    }

    /// tinyconfig with the fragments merged, once per build directory and fragment set.
    fn configure(&self, text: &mut String) -> Result<()> {
        std::fs::create_dir_all(&self.build)
            .with_context(|| format!("mkdir {}", self.build.display()))?;
        let stamp = self.build.join(".memcgtest-config");
        if std::fs::read_to_string(&stamp).ok().as_deref() == Some(&self.stamp()) {
            return Ok(());
        }
        let (ok, out) = self.make(&["tinyconfig"])?;
        text.push_str(&out);
        if !ok {
            return Err(anyhow!("make tinyconfig failed:\n{out}"));
        }
        let mut merge = Command::new(self.src.join("scripts/kconfig/merge_config.sh"));
        merge
            .current_dir(&self.src)
            .arg("-m")
            .arg("-O")
            .arg(&self.build);
        merge.arg(self.build.join(".config"));
        for (i, (_, t)) in self.fragments.iter().enumerate() {
            let p = self.build.join(format!(".memcgtest-fragment-{i}"));
            std::fs::write(&p, t).with_context(|| format!("write {}", p.display()))?;
            merge.arg(p);
        }
        let out = merge
            .output()
            .context("run scripts/kconfig/merge_config.sh")?;
        text.push_str(&String::from_utf8_lossy(&out.stdout));
        if !out.status.success() {
            return Err(anyhow!(
                "merge_config.sh failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        std::fs::write(&stamp, self.stamp()).with_context(|| format!("write {}", stamp.display()))
    }

    /// `make O=build ARGS` in the source tree: whether it succeeded, and its output. Its output
    /// goes to a file as it comes; on a terminal, the time and its last line are shown.
    fn make(&self, args: &[&str]) -> Result<(bool, String)> {
        let out_file = self.build.join(".memcgtest-make.out");
        let f = std::fs::File::create(&out_file)
            .with_context(|| format!("create {}", out_file.display()))?;
        let mut cmd = Command::new("make");
        // make dies with us, even if we are SIGKILLed (it passes SIGTERM on to its jobs and
        // deletes the target it was making), so a run started again never races it.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                Ok(())
            });
        }
        let mut child = cmd
            .current_dir(&self.src)
            .arg(format!("O={}", self.build.display()))
            .arg(format!("-j{}", self.jobs))
            .args(args)
            .stdin(Stdio::null())
            .stdout(f.try_clone()?)
            .stderr(f)
            .spawn()
            .with_context(|| format!("run make {} in {}", args.join(" "), self.src.display()))?;
        let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
        let start = Instant::now();
        let status = loop {
            if let Some(st) = child.try_wait()? {
                break st;
            }
            if crate::sys::cleanup::interrupted() {
                let pid = nix::unistd::Pid::from_raw(child.id() as i32);
                let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
                let _ = child.wait();
                return Err(crate::model::error::Error::Interrupted.into());
            }
            std::thread::sleep(std::time::Duration::from_millis(500));
            if tty {
                let last: String = last_line(&out_file).chars().take(60).collect();
                eprint!(
                    "\r\x1b[K  make {}: {:.0} s {last}",
                    args.join(" "),
                    start.elapsed().as_secs_f64()
                );
            }
        };
        if tty {
            eprint!("\r\x1b[K");
        }
        let text = std::fs::read_to_string(&out_file).unwrap_or_default();
        Ok((status.success(), text))
    }

    /// Every `CONFIG_X=v` line of the fragments is in the configuration (a patch may have
    /// removed or renamed an option the suite needs); else the lines that are not.
    fn options_set(&self) -> Result<(), String> {
        let cfg = std::fs::read_to_string(self.build.join(".config")).unwrap_or_default();
        let have: std::collections::HashSet<&str> = cfg.lines().collect();
        let missing: Vec<String> = (self.fragments.iter())
            .flat_map(|(name, t)| t.lines().map(move |l| (name, l.trim())))
            .filter(|(_, l)| l.starts_with("CONFIG_") && !have.contains(l))
            .map(|(name, l)| format!("error: {l} (from {name}) is not set after olddefconfig"))
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(missing.join("\n") + "\n")
        }
    }
}

/// The last line of a file that grows (make's output, read twice a second): its last 4 KiB only.
pub(super) fn last_line(path: &Path) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let mut tail = Vec::new();
    if let Ok(mut f) = std::fs::File::open(path) {
        let _ = f
            .seek(SeekFrom::End(-4096))
            .or_else(|_| f.seek(SeekFrom::Start(0)));
        let _ = f.read_to_end(&mut tail);
    }
    let text = String::from_utf8_lossy(&tail);
    text.lines().last().unwrap_or("").trim().to_string()
}

/// The lines of a build log that say what went wrong: the compiler's and the linker's errors
/// with the lines of context they print, make's `***` lines; at most 40.
pub fn error_lines(log: &str) -> Vec<String> {
    let lines: Vec<&str> = log.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let error = l.contains("error:") || l.contains("Error ") || l.contains("*** ");
        if error && !out.iter().any(|o: &String| o == l) {
            out.push(l.to_string());
            // The compiler's source line and caret follow its message.
            for next in lines.iter().skip(i + 1).take(2) {
                if next.starts_with(' ') && next.contains('|') {
                    out.push(next.to_string());
                }
            }
        }
        if out.len() >= 40 {
            break;
        }
    }
    out
}
