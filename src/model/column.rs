//! Column ids: what each column of a sampled series holds. The text form (`Display`, `parse`) is
//! the CSV header and the record's column names; it is built and taken apart only here.

use std::fmt;

/// Column-name prefixes that are not test groups: /proc/vmstat, the sampler's own timing, and the
/// references the checks compare with (per-file truth, the run's and the memcg root's totals,
/// memory.numa_stat, the tasks' own memory).
pub const META_PREFIXES: [&str; 5] = ["vmstat", "sampler", "oracle", "numa", "tasks"];

/// Whether a column belongs to no test group (see META_PREFIXES).
pub fn is_meta_column(column: &str) -> bool {
    META_PREFIXES
        .iter()
        .any(|p| column.strip_prefix(p).is_some_and(|r| r.starts_with('.')))
}

/// The sampler's own column: how long each pass over the sources took (µs).
pub const PASS_COLUMN: &str = "sampler.pass_us";

/// One column of a sampled series.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Column {
    /// A test group's counter, `<group>.<counter>`; `local`: its own value, `<group>.<counter>.local`.
    Group {
        group: String,
        counter: String,
        local: bool,
    },
    /// A /proc/vmstat key read after the cgroup files (`vmstat.<key>`) or before (`vmstat.pre.<key>`).
    Vmstat { key: String, pre: bool },
    /// The per-file truth of a group, read after the cgroup files
    /// (`oracle.files.<group>.<counter>`) or before (`oracle.files.pre.<group>.<counter>`).
    Files {
        group: String,
        counter: String,
        pre: bool,
    },
    /// The fallback's machine view (`oracle.<which>.<counter>`): the run's top group (`run`) or
    /// the memcg root (`root`), hierarchical, read before the test groups.
    Machine { which: String, counter: String },
    /// A group's counter summed over the nodes of its v2 memory.numa_stat, read right after its
    /// memory.stat (`numa.<group>.<counter>`) or right before (`numa.pre.<group>.<counter>`).
    Numa {
        group: String,
        counter: String,
        pre: bool,
    },
    /// What a group's tasks count of their own memory (/proc/PID/status), read right after the
    /// group files (`tasks.<group>.<counter>`) or right before (`tasks.pre.<group>.<counter>`).
    Tasks {
        group: String,
        counter: String,
        pre: bool,
    },
    /// The sampler's own meta data (`sampler.<name>`).
    Sampler(String),
}

impl Column {
    /// A group's counter as a scenario names it (`dirty`, or `dirty.local` for its own value).
    pub fn group(group: &str, counter: &str) -> Column {
        let (counter, local) = super::counter::split_local(counter);
        Column::Group {
            group: group.into(),
            counter: counter.into(),
            local,
        }
    }
    /// A group's own (non-hierarchical) value of a counter.
    pub fn local(group: &str, counter: &str) -> Column {
        Column::Group {
            group: group.into(),
            counter: counter.into(),
            local: true,
        }
    }
    pub fn vmstat(key: &str) -> Column {
        Column::Vmstat {
            key: key.into(),
            pre: false,
        }
    }
    pub fn vmstat_pre(key: &str) -> Column {
        Column::Vmstat {
            key: key.into(),
            pre: true,
        }
    }
    pub fn files(group: &str, counter: &str, pre: bool) -> Column {
        Column::Files {
            group: group.into(),
            counter: counter.into(),
            pre,
        }
    }
    pub fn numa(group: &str, counter: &str, pre: bool) -> Column {
        Column::Numa {
            group: group.into(),
            counter: counter.into(),
            pre,
        }
    }
    pub fn tasks(group: &str, counter: &str, pre: bool) -> Column {
        Column::Tasks {
            group: group.into(),
            counter: counter.into(),
            pre,
        }
    }
    pub fn machine(which: &str, counter: &str) -> Column {
        Column::Machine {
            which: which.into(),
            counter: counter.into(),
        }
    }

    /// Reads a column name back; `None` for names that are not columns (no `.`).
    pub fn parse(name: &str) -> Option<Column> {
        let (head, rest) = name.split_once('.')?;
        Some(match head {
            "vmstat" => match rest.strip_prefix("pre.") {
                Some(key) => Column::vmstat_pre(key),
                None => Column::vmstat(rest),
            },
            "sampler" => Column::Sampler(rest.into()),
            "numa" | "tasks" => {
                let (pre, rest) = match rest.strip_prefix("pre.") {
                    Some(g) if g.contains('.') => (true, g),
                    _ => (false, rest),
                };
                let (group, counter) = rest.rsplit_once('.')?;
                if head == "numa" {
                    Column::numa(group, counter, pre)
                } else {
                    Column::tasks(group, counter, pre)
                }
            }
            "oracle" => match rest.strip_prefix("files.") {
                Some(f) => {
                    let (pre, f) = match f.strip_prefix("pre.") {
                        Some(g) if g.contains('.') => (true, g),
                        _ => (false, f),
                    };
                    let (group, counter) = f.split_once('.')?;
                    Column::files(group, counter, pre)
                }
                None => {
                    let (which, counter) = rest.split_once('.')?;
                    Column::machine(which, counter)
                }
            },
            group => Column::group(group, rest),
        })
    }

    /// The test group a column belongs to, if any.
    pub fn test_group(&self) -> Option<&str> {
        match self {
            Column::Group { group, .. } => Some(group),
            _ => None,
        }
    }
}

impl fmt::Display for Column {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Column::Group {
                group,
                counter,
                local,
            } => write!(f, "{group}.{counter}{}", if *local { ".local" } else { "" }),
            Column::Vmstat { key, pre } => {
                write!(f, "vmstat.{}{key}", if *pre { "pre." } else { "" })
            }
            Column::Files {
                group,
                counter,
                pre,
            } => write!(
                f,
                "oracle.files.{}{group}.{counter}",
                if *pre { "pre." } else { "" }
            ),
            Column::Machine { which, counter } => write!(f, "oracle.{which}.{counter}"),
            Column::Numa {
                group,
                counter,
                pre,
            } => write!(
                f,
                "numa.{}{group}.{counter}",
                if *pre { "pre." } else { "" }
            ),
            Column::Tasks {
                group,
                counter,
                pre,
            } => write!(
                f,
                "tasks.{}{group}.{counter}",
                if *pre { "pre." } else { "" }
            ),
            Column::Sampler(name) => write!(f, "sampler.{name}"),
        }
    }
}

/// The columns a check's failing value is the sum of, written `a.x+a.y` or `a.x+y` (parts without
/// a group are the first part's group's), as `CheckResult::column` holds them.
pub fn sum_parts(sum: &str) -> Vec<String> {
    let group = sum.split('.').next().unwrap_or("");
    sum.split('+')
        .map(|part| {
            if part.contains('.') {
                part.to_string()
            } else {
                format!("{group}.{part}")
            }
        })
        .collect()
}

/// A sum of a group's counters in the short form (`g.dirty+writeback`).
pub fn short_sum(group: &str, counters: &[&str]) -> String {
    let mut s = Column::group(group, counters[0]).to_string();
    for c in &counters[1..] {
        s.push('+');
        s.push_str(c);
    }
    s
}

/// Whether a `CheckResult::column` (a column or a sum) shows `counter` (`dirty` matches `a.dirty`,
/// `a.dirty.local` and the sums holding them).
pub fn sum_shows(sum: &str, counter: &str) -> bool {
    !counter.is_empty()
        && sum.split('+').any(|part| {
            let part = part.strip_suffix(".local").unwrap_or(part);
            part == counter || part.ends_with(&format!(".{counter}"))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for n in [
            "test.dirty",
            "p.dirty.local",
            "vmstat.nr_dirty",
            "vmstat.pre.nr_writeback",
            "oracle.files.a.dirty",
            "oracle.files.pre.a.writeback",
            "oracle.files.pre.dirty",
            "oracle.run.dirty",
            "oracle.root.writeback",
            "sampler.pass_us",
            "numa.p/test.dirty",
            "numa.pre.p/test.dirty",
            "numa.pre.dirty",
            "tasks.p/a.anon",
            "tasks.pre.p/a.shmem",
        ] {
            assert_eq!(Column::parse(n).unwrap().to_string(), n);
        }
        assert_eq!(Column::parse("t"), None);
        assert_eq!(
            Column::parse("oracle.files.pre.dirty"),
            Some(Column::files("pre", "dirty", false))
        );
        assert_eq!(
            Column::parse("p.dirty.local"),
            Some(Column::local("p", "dirty"))
        );
    }

    #[test]
    fn sums() {
        assert_eq!(sum_parts("a.dirty+writeback"), ["a.dirty", "a.writeback"]);
        assert_eq!(sum_parts("a.dirty+a.writeback"), ["a.dirty", "a.writeback"]);
        assert_eq!(short_sum("a", &["dirty", "writeback"]), "a.dirty+writeback");
    }
}
