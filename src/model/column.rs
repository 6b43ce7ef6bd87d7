//! Column ids: what each column of a sampled series holds. Series, checks and reports key on the
//! `Column` value; text is made only here: `Display` for messages, `csv_header` for the CSV file
//! (with the unit), serde for results.json.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The scenario's own top group (`memcgtest-<pid>-<scenario>`), sampled beside its declared
/// groups under this name: it holds them and the helpers' group (`aux`) and nothing else, so its
/// hierarchical counters are theirs summed (the implied `hierarchy((top))`).
pub const TOP_GROUP: &str = "(top)";

/// The group the scenario's helpers (sync, antagonists) run in, below the top group: sampled for
/// the top group's sum, judged by nothing of its own.
pub const HELPER_GROUP: &str = "aux";

/// Whether group `g` is below `parent` (any depth); every sampled group is below the top group.
pub fn is_below(g: &str, parent: &str) -> bool {
    if parent == TOP_GROUP {
        return g != TOP_GROUP;
    }
    g.strip_prefix(parent).is_some_and(|r| r.starts_with('/'))
}

/// Whether group `g` is a direct child of `parent`.
pub fn is_child(g: &str, parent: &str) -> bool {
    if parent == TOP_GROUP {
        return g != TOP_GROUP && !g.contains('/');
    }
    (g.strip_prefix(parent).and_then(|r| r.strip_prefix('/'))).is_some_and(|r| !r.contains('/'))
}

/// One column of a sampled series.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
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
    /// A group's usage read a second time, after its memory.stat and the files between
    /// (`again.<group>.<counter>`): what the group's files showed was read between the two reads
    /// of its page counter, so the counter at that moment lies between them while it moves one
    /// way, however long the sampler was kept off the CPU in between.
    Again { group: String, counter: String },
    /// The sampler's own meta data (`sampler.<name>`).
    Sampler(String),
}

/// A tasks column's counter for the tasks' threads beyond their first (`Threads:` - 1 in
/// /proc/PID/status): before Linux 6.2 each thread caches up to 64 events of its mm's counters
/// (SPLIT_RSS_COUNTING), and one that sleeps never passes them on.
pub const EXTRA_THREADS: &str = "extra_threads";

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
    pub fn again(group: &str, counter: &str) -> Column {
        Column::Again {
            group: group.into(),
            counter: counter.into(),
        }
    }
    pub fn machine(which: &str, counter: &str) -> Column {
        Column::Machine {
            which: which.into(),
            counter: counter.into(),
        }
    }

    /// Reads a column name back (tests build series from names); `None` for names that are not
    /// columns (no `.`). Ambiguous for a group named like a prefix: results never need it.
    #[cfg(test)]
    pub fn parse(name: &str) -> Option<Column> {
        let (head, rest) = name.split_once('.')?;
        Some(match head {
            "vmstat" => match rest.strip_prefix("pre.") {
                Some(key) => Column::vmstat_pre(key),
                None => Column::vmstat(rest),
            },
            "sampler" => Column::Sampler(rest.into()),
            "again" => {
                let (group, counter) = rest.rsplit_once('.')?;
                Column::again(group, counter)
            }
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

    /// The sampler's own column: how long each pass over the sources took (µs).
    pub fn pass() -> Column {
        Column::Sampler("pass_us".into())
    }

    /// The test group a column belongs to, if any.
    pub fn test_group(&self) -> Option<&str> {
        match self {
            Column::Group { group, .. } => Some(group),
            _ => None,
        }
    }

    /// The counter of a test group's column (`dirty` for `a.dirty` and `a.dirty.local`).
    pub fn counter(&self) -> Option<&str> {
        match self {
            Column::Group { counter, .. } => Some(counter),
            _ => None,
        }
    }

    /// The unit of the column's values.
    pub fn unit(&self) -> &'static str {
        match self {
            Column::Group { counter, .. } => match super::counter::counter(counter) {
                Some(c) if c.unit == super::counter::Unit::Events => "events",
                _ => "B",
            },
            Column::Vmstat { key, .. } if key.starts_with("nr_") => "pages",
            Column::Vmstat { .. } => "events",
            Column::Sampler(_) => "us",
            Column::Tasks { counter, .. } if counter == EXTRA_THREADS => "threads",
            Column::Files { .. }
            | Column::Again { .. }
            | Column::Machine { .. }
            | Column::Numa { .. }
            | Column::Tasks { .. } => "B",
        }
    }

    /// The CSV header: unambiguous (a prefix with `:`, which no group name has, for every column
    /// that is not a test group's) and with the unit: `test.dirty[B]`, `vmstat:nr_dirty[pages]`.
    pub fn csv_header(&self) -> String {
        let pre = |p: bool| if p { "pre:" } else { "" };
        let name = match self {
            Column::Group { .. } => self.to_string(),
            Column::Vmstat { key, pre: p } => format!("vmstat:{}{key}", pre(*p)),
            Column::Files {
                group,
                counter,
                pre: p,
            } => format!("files:{}{group}.{counter}", pre(*p)),
            Column::Machine { which, counter } => format!("machine:{which}.{counter}"),
            Column::Numa {
                group,
                counter,
                pre: p,
            } => format!("numa:{}{group}.{counter}", pre(*p)),
            Column::Tasks {
                group,
                counter,
                pre: p,
            } => format!("tasks:{}{group}.{counter}", pre(*p)),
            Column::Again { group, counter } => format!("again:{group}.{counter}"),
            Column::Sampler(n) => format!("sampler:{n}"),
        };
        format!("{name}[{}]", self.unit())
    }
}

impl Column {
    /// The column a CSV header names ([`Column::csv_header`] read back), for timelines drawn
    /// from a report's CSV. None for a header no column writes.
    pub fn from_csv_header(header: &str) -> Option<Column> {
        let name = header.rsplit_once('[').map_or(header, |(n, _)| n);
        let pre = |rest: &str| match rest.strip_prefix("pre:") {
            Some(r) => (true, r.to_string()),
            None => (false, rest.to_string()),
        };
        let group_counter = |rest: &str| -> Option<(String, String)> {
            let (g, c) = rest.rsplit_once('.')?;
            Some((g.to_string(), c.to_string()))
        };
        let Some((kind, rest)) = name.split_once(':') else {
            let (group, counter) = name.split_once('.')?;
            return Some(Column::group(group, counter));
        };
        Some(match kind {
            "vmstat" => {
                let (p, key) = pre(rest);
                Column::Vmstat { key, pre: p }
            }
            "files" | "numa" | "tasks" => {
                let (p, rest) = pre(rest);
                let (group, counter) = if kind == "files" {
                    let (g, c) = rest.split_once('.')?;
                    (g.to_string(), c.to_string())
                } else {
                    group_counter(&rest)?
                };
                match kind {
                    "files" => Column::Files {
                        group,
                        counter,
                        pre: p,
                    },
                    "numa" => Column::Numa {
                        group,
                        counter,
                        pre: p,
                    },
                    _ => Column::Tasks {
                        group,
                        counter,
                        pre: p,
                    },
                }
            }
            "machine" => {
                let (which, counter) = rest.split_once('.')?;
                Column::machine(which, counter)
            }
            "again" => {
                let (group, counter) = group_counter(rest)?;
                Column::Again { group, counter }
            }
            "sampler" => Column::Sampler(rest.to_string()),
            _ => return None,
        })
    }
}

/// Columns joined by `+` with their full names (`a.dirty+a.writeback`), for messages.
pub fn join_names(cols: &[Column]) -> String {
    let names: Vec<String> = cols.iter().map(|c| format!("{c}")).collect();
    names.join("+")
}

/// A sum of columns as messages show it: `a.dirty+a.writeback`, or `a.dirty+writeback` when the
/// parts are one group's.
pub fn sum_label(cols: &[Column]) -> String {
    let group = cols.first().and_then(|c| c.test_group());
    let mut s = String::new();
    for (i, c) in cols.iter().enumerate() {
        if i > 0 {
            s.push('+');
        }
        match (i, c) {
            (
                1..,
                Column::Group {
                    group: g,
                    counter,
                    local: false,
                },
            ) if Some(g.as_str()) == group => s.push_str(counter),
            _ => s.push_str(&c.to_string()),
        }
    }
    s
}

/// Tests build series from names.
#[cfg(test)]
impl From<&str> for Column {
    fn from(name: &str) -> Column {
        Column::parse(name).unwrap_or_else(|| panic!("not a column: {name}"))
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
            Column::Again { group, counter } => write!(f, "again.{group}.{counter}"),
            Column::Sampler(name) => write!(f, "sampler.{name}"),
        }
    }
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
            "again.p/a.usage",
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
        let (d, w) = (Column::group("a", "dirty"), Column::group("a", "writeback"));
        assert_eq!(sum_label(&[d.clone(), w]), "a.dirty+writeback");
        assert_eq!(
            sum_label(&[d, Column::group("b", "writeback")]),
            "a.dirty+b.writeback"
        );
    }

    #[test]
    fn every_csv_header_reads_back_as_its_column() {
        let cols = [
            Column::group("p/a", "dirty"),
            Column::local("p", "file_writeback"),
            Column::vmstat("nr_dirty"),
            Column::vmstat_pre("pgfault"),
            Column::files("p/a", "dirty", false),
            Column::files("w", "writeback", true),
            Column::machine("root", "anon"),
            Column::numa("g", "file", true),
            Column::numa("g", "anon", false),
            Column::tasks("g", "rss", false),
            Column::tasks("p/q", "rss", true),
            Column::again("g", "usage"),
            Column::pass(),
        ];
        for c in cols {
            assert_eq!(
                Column::from_csv_header(&c.csv_header()),
                Some(c.clone()),
                "{c}"
            );
        }
        assert_eq!(Column::from_csv_header("t[s]"), None);
        assert_eq!(Column::from_csv_header("bogus:x[B]"), None);
    }

    #[test]
    fn csv_headers_are_unambiguous_and_carry_units() {
        assert_eq!(
            Column::group("vmstat", "dirty").csv_header(),
            "vmstat.dirty[B]"
        );
        assert_eq!(
            Column::vmstat("nr_dirty").csv_header(),
            "vmstat:nr_dirty[pages]"
        );
        assert_eq!(
            Column::vmstat_pre("pgfault").csv_header(),
            "vmstat:pre:pgfault[events]"
        );
        assert_eq!(
            Column::group("a", "limit_hits").csv_header(),
            "a.limit_hits[events]"
        );
        assert_eq!(Column::pass().csv_header(), "sampler:pass_us[us]");
        assert_eq!(
            Column::files("a", "dirty", true).csv_header(),
            "files:pre:a.dirty[B]"
        );
    }
}
