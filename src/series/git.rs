//! The series' own checkout: a shared clone of the user's tree (its objects borrowed through
//! git's alternates, nothing written into the user's repository or checkout), the patches of an
//! mbox applied one by one with `git am`, and what each commit is called.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, anyhow};
use serde::{Deserialize, Serialize};

/// One commit of the series; index 0 is the base.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Patch {
    pub index: usize,
    pub commit: String,
    /// The commit's tree: what is built and tested is keyed by it, so the same series given as
    /// an mbox (new commit ids) and as a range shares its images and results.
    pub tree: String,
    pub subject: String,
}

impl Patch {
    /// The abbreviated commit id, as `git log --oneline` shows it.
    pub fn short(&self) -> &str {
        &self.commit[..self.commit.len().min(12)]
    }
}

/// Runs git with `args` in `dir`; its stdout, or an error with its stderr.
pub fn git(dir: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_COMMITTER_NAME", "memcgtest series")
        .env("GIT_COMMITTER_EMAIL", "memcgtest@localhost")
        .output()
        .with_context(|| format!("run git {} in {}", args.join(" "), dir.display()))?;
    if !out.status.success() {
        return Err(anyhow!(
            "git {} in {}: {}",
            args.join(" "),
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The commit `rev` names in `dir`.
pub fn commit_of(dir: &Path, rev: &str) -> Result<String> {
    git(
        dir,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{rev}^{{commit}}"),
        ],
    )
    .map_err(|_| anyhow!("{}: no commit {rev}", dir.display()))
}

/// The patch that `commit` is, numbered `index`.
pub fn patch(dir: &Path, index: usize, commit: &str) -> Result<Patch> {
    let line = git(dir, &["log", "-1", "--format=%H %T %s", commit])?;
    let mut it = line.splitn(3, ' ');
    let (Some(c), Some(t)) = (it.next(), it.next()) else {
        return Err(anyhow!("git log of {commit}: {line}"));
    };
    Ok(Patch {
        index,
        commit: c.into(),
        tree: t.into(),
        subject: it.next().unwrap_or("").into(),
    })
}

/// The commits of `base..head` in `dir`, oldest first, with the base as patch 0. A range with
/// merges is refused: a series is a line of patches.
pub fn range(dir: &Path, base: &str, head: &str) -> Result<Vec<Patch>> {
    let merges = git(dir, &["rev-list", "--merges", &format!("{base}..{head}")])?;
    if !merges.is_empty() {
        return Err(anyhow!(
            "{base}..{head} has merge commits ({}): a series is a line of patches",
            merges.lines().next().unwrap_or("")
        ));
    }
    let list = git(dir, &["rev-list", "--reverse", &format!("{base}..{head}")])?;
    let mut out = vec![patch(dir, 0, base)?];
    for (i, c) in list.lines().enumerate() {
        out.push(patch(dir, i + 1, c)?);
    }
    Ok(out)
}

/// The series' checkout under the output directory: a clone of `tree` sharing its objects,
/// made once and kept (so builds stay incremental when a run is resumed).
pub fn checkout(tree: &Path, out: &Path) -> Result<PathBuf> {
    let dir = out.join("src");
    if !dir.join(".git").exists() {
        let tree = tree
            .canonicalize()
            .with_context(|| format!("--tree {}", tree.display()))?;
        git(
            out,
            &[
                "clone",
                "-q",
                "--shared",
                "--no-checkout",
                &tree.to_string_lossy(),
                "src",
            ],
        )?;
    }
    Ok(dir)
}

/// Checks out `commit` (detached, discarding changes to the checkout).
pub fn switch(dir: &Path, commit: &str) -> Result<()> {
    git(dir, &["checkout", "-q", "-f", "--detach", commit])?;
    Ok(())
}

/// A patch of an mbox that `git am` refused: its number in the mbox, subject and git's words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refused {
    pub number: usize,
    pub subject: String,
    pub error: String,
}

/// Applies the mbox's patches on `base` one by one (committer date = author date and a fixed
/// committer, so the same mbox gives the same commit ids on every run); the commits made, and
/// the first patch that did not apply.
pub fn apply_mbox(
    dir: &Path,
    base: &str,
    mbox: &Path,
    scratch: &Path,
) -> Result<(Vec<Patch>, Option<Refused>)> {
    // What an interrupted `git am` left would refuse the next one.
    let _ = git(dir, &["am", "--abort"]);
    switch(dir, base)?;
    let split = scratch.join("mbox");
    let _ = std::fs::remove_dir_all(&split);
    std::fs::create_dir_all(&split).with_context(|| format!("mkdir {}", split.display()))?;
    let mbox = mbox
        .canonicalize()
        .with_context(|| format!("--mbox {}", mbox.display()))?;
    let out_dir = format!("-o{}", split.display());
    let n: usize = git(dir, &["mailsplit", &out_dir, &mbox.to_string_lossy()])?
        .parse()
        .map_err(|_| anyhow!("{}: not an mbox git mailsplit can read", mbox.display()))?;
    if n == 0 {
        return Err(anyhow!("{}: no patches in it", mbox.display()));
    }
    let mut out = vec![patch(dir, 0, base)?];
    for i in 1..=n {
        let file = split.join(format!("{i:04}"));
        let f = file.to_string_lossy();
        if let Err(e) = git(dir, &["am", "-q", "--committer-date-is-author-date", &f]) {
            let _ = git(dir, &["am", "--abort"]);
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            let refused = Refused {
                number: i,
                subject: mail_subject(&text),
                error: format!("{e:#}"),
            };
            return Ok((out, Some(refused)));
        }
        let head = commit_of(dir, "HEAD")?;
        out.push(patch(dir, i, &head)?);
    }
    Ok((out, None))
}

/// The subject of a mail, its `[PATCH n/m]` prefix removed and folded lines joined.
pub fn mail_subject(mail: &str) -> String {
    let mut lines = mail.lines().skip_while(|l| !l.starts_with("Subject:"));
    let Some(first) = lines.next() else {
        return String::new();
    };
    let mut s = first["Subject:".len()..].trim().to_string();
    for l in lines.take_while(|l| l.starts_with(' ') || l.starts_with('\t')) {
        s.push(' ');
        s.push_str(l.trim());
    }
    while s.starts_with('[') {
        match s.find(']') {
            Some(e) => s = s[e + 1..].trim_start().to_string(),
            None => break,
        }
    }
    s
}
