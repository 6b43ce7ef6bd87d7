//! The layers of the crate, checked on its source: every `crate::` path (in `use` lines, braced
//! groups and inline paths, tests included) must point down or sideways:
//!
//!   model  <-  sys  <-  check  <-  scenario  <-  exec  <-  {suite, vm, ab, compare, ...}
//!   model  <-  report (reporters see the model only)
//!
//! and no two top-level modules may import each other, directly or through others. Inside each
//! module, the files and folders (exec's runner, phases, steps, ...) form no cycle either.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Rank of each top-level module; a module may import only modules of lower rank, or of its own
/// rank without a cycle (the commands). `report` is special: it imports the model only.
fn rank(module: &str) -> Option<u32> {
    Some(match module {
        "model" => 0,
        "sys" | "report" => 1,
        "check" => 2,
        "scenario" => 3,
        "exec" => 4,
        "suite" | "vm" | "ab" | "compare" | "coverage" | "contracts" | "explore" | "series"
        | "mutate" => 5,
        _ => return None,
    })
}

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The module path of a source file: src/exec/runner.rs is exec::runner, src/exec/mod.rs exec.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|l| l == "mod" || l == "lib") {
        parts.pop();
    }
    parts
}

/// The code of a file without comments (line comments and doc comments; string contents stay,
/// none of them holds `crate::`).
fn code(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) if !l[..i].contains('"') => &l[..i],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn ident(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// Every module path a file names: `crate::a::b`, `crate::{a, b::c}`, and `super::x` resolved
/// against the file's own module; each as a list of names.
fn imports(module: &[String], code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let after = &rest[i + "crate::".len()..];
        if let Some(group) = after.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let item = item.trim();
                if !item.is_empty() {
                    out.push(path(item));
                }
            }
        } else {
            out.push(path(after));
        }
        rest = after;
    }
    // super:: relative to the file's module (or its parent module for a tests module inside it:
    // `use super::*` there is the file itself).
    let mut rest = code;
    while let Some(i) = rest.find("super::") {
        let mut ups = 1;
        let mut after = &rest[i + "super::".len()..];
        while let Some(a) = after.strip_prefix("super::") {
            ups += 1;
            after = a;
        }
        if ups <= module.len() {
            let mut p: Vec<String> = module[..module.len() - ups].to_vec();
            if let Some(group) = after.strip_prefix('{') {
                let end = group.find('}').unwrap_or(group.len());
                for item in group[..end].split(',') {
                    let mut q = p.clone();
                    q.extend(path(item.trim()));
                    out.push(q);
                }
            } else {
                p.extend(path(after));
                out.push(p);
            }
        }
        rest = after;
    }
    out
}

fn path(s: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut s = s;
    loop {
        let id = ident(s);
        if id.is_empty() {
            break;
        }
        parts.push(id.to_string());
        match s[id.len()..].strip_prefix("::") {
            Some(r) => s = r,
            None => break,
        }
    }
    parts
}

struct Graph {
    /// From a module to the modules it imports, with one file that does it.
    edges: BTreeMap<String, BTreeMap<String, String>>,
}

fn graph(depth: usize, within: Option<&str>) -> Graph {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rs_files(&src, &mut files);
    let mut edges: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for f in files {
        let module = module_of(&src, &f);
        if module.is_empty() || module == ["main"] || module == ["cli"] {
            continue;
        }
        if within.is_some_and(|w| module[0] != w) {
            continue;
        }
        let from = module[..module.len().min(depth)].join("::");
        let text = std::fs::read_to_string(&f).unwrap();
        for imp in imports(&module, &code(&text)) {
            if imp.is_empty() || within.is_some_and(|w| imp[0] != w) {
                continue;
            }
            // A name below the depth that is not a module (a type in mod.rs) stays at its module.
            let to = imp[..imp.len().min(depth)].join("::");
            if to != from && !from.starts_with(&format!("{to}::")) {
                edges
                    .entry(from.clone())
                    .or_default()
                    .entry(to)
                    .or_insert_with(|| f.display().to_string());
            }
        }
    }
    Graph { edges }
}

/// A cycle of the graph, if it has one.
fn cycle(g: &Graph) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        g: &Graph,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = stack.iter().position(|s| s == n) {
            let mut c = stack[i..].to_vec();
            c.push(n.to_string());
            return Some(c);
        }
        if done.contains(n) {
            return None;
        }
        stack.push(n.to_string());
        let next: Vec<String> = g
            .edges
            .get(n)
            .map(|e| e.keys().cloned().collect())
            .unwrap_or_default();
        for m in next {
            if let Some(c) = visit(&m, g, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        done.insert(n.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for n in g.edges.keys() {
        if let Some(c) = visit(n, g, &mut Vec::new(), &mut done) {
            return Some(c);
        }
    }
    None
}

#[test]
fn imports_run_down_the_layers() {
    let g = graph(1, None);
    let mut wrong = Vec::new();
    for (from, tos) in &g.edges {
        let Some(rf) = rank(from) else {
            wrong.push(format!(
                "{from}: a top-level module without a layer (add it to rank())"
            ));
            continue;
        };
        for (to, file) in tos {
            let Some(rt) = rank(to) else {
                wrong.push(format!("{file}: imports {to}, a module without a layer"));
                continue;
            };
            let up = rt > rf || (from == "report" && to != "model") || (rf == rt && rf < 5);
            if up {
                wrong.push(format!(
                    "{file}: {from} imports {to}, which is not below it"
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports that run up:\n{}",
        wrong.join("\n")
    );
    assert_eq!(cycle(&g), None, "top-level modules import each other");
}

#[test]
fn the_files_of_each_module_form_no_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut cycles = Vec::new();
    for e in std::fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if p.is_dir() {
            for depth in 2..=3 {
                if let Some(c) = cycle(&graph(depth, Some(&name))) {
                    cycles.push(c.join(" -> "));
                }
            }
        }
    }
    assert!(
        cycles.is_empty(),
        "files of one module import each other in a cycle:\n{}",
        cycles.join("\n")
    );
}

#[test]
fn the_parser_sees_use_groups_and_super_paths() {
    let m = vec!["exec".to_string(), "runner".to_string()];
    let found = imports(
        &m,
        "use crate::{model, sys::cgroup::Cgroup};\nuse super::phases::Run;\nlet x = crate::report::ktap(&r);",
    );
    let names: Vec<String> = found.iter().map(|p| p.join("::")).collect();
    assert!(names.contains(&"model".to_string()), "{names:?}");
    assert!(
        names.contains(&"sys::cgroup::Cgroup".to_string()),
        "{names:?}"
    );
    assert!(names.contains(&"report::ktap".to_string()), "{names:?}");
    assert!(
        names.contains(&"exec::phases::Run".to_string()),
        "{names:?}"
    );
}
