//! interface: each key of a group's flat-keyed files printed once. memory.stat, memory.numa_stat
//! and the event files print one line per counter of a table the kernel walks (memory_stats[],
//! memcg1_stat_names[], the event names); a key printed twice is a counter that lost its name
//! (workingset_restore for both its _anon and _file halves: 8d3fe09d8d66, 5.9) and a reader
//! that takes the first or the last line reads the other counter.

use crate::check::args::CheckArgs;
use crate::check::{Check, CheckResult, CheckSpec, Kind, Outcome, missing};
use crate::model::error::ScenarioError;
use crate::model::{Record, TOP_GROUP};

/// `interface`: no key twice in any declared group's memory.stat, memory.numa_stat,
/// memory.events(.local) or memory.swap.events, read at the scenario's end.
#[derive(Debug, Clone, PartialEq)]
pub struct Interface;

/// `interface` in the check table.
pub const KIND: Kind = Kind {
    kind: "interface",
    doc: "Each key of the declared groups' flat-keyed files (memory.stat, memory.numa_stat, \
memory.events, memory.events.local, memory.swap.events, where the kernel has them) is printed \
once, read at the scenario's end: each line is one counter of a table the kernel walks, and a \
key printed twice is a counter that lost its name (a reader that takes the first or the last \
line reads the other counter). Every scenario gets it. Result name: `interface((top))`.",
    keys: &[],
    parse,
    promises: &[],
};

pub fn parse(_i: &CheckArgs) -> Result<Check, ScenarioError> {
    Ok(Check::new(Interface))
}

impl CheckSpec for Interface {
    fn name(&self) -> String {
        format!("interface({TOP_GROUP})")
    }
    fn evaluate(&self, rec: &Record) -> CheckResult {
        interface(self.name(), rec)
    }
}

pub fn interface(name: String, rec: &Record) -> CheckResult {
    let Some(repeated) = &rec.repeated else {
        return missing(
            name,
            "the groups' files were not read at the end".to_string(),
        );
    };
    let Some(first) = repeated.first() else {
        return CheckResult::new(
            name,
            Outcome::Pass,
            "every key once".into(),
            "every key once".into(),
            "each key of the groups' memory.stat, memory.numa_stat and event files printed once"
                .into(),
        );
    };
    let all: Vec<String> = (repeated.iter())
        .map(|r| format!("{}'s {} {} x{}", r.group, r.file, r.key, r.times))
        .collect();
    let mut res = CheckResult::new(
        name,
        Outcome::Fail,
        format!(
            "{}'s {} prints {} {} times",
            first.group, first.file, first.key, first.times
        ),
        "every key once".into(),
        format!("keys printed more than once: {}", all.join(", ")),
    );
    res.at = rec.series.t.last().copied();
    res
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::record::{RepeatedKey, repeated_keys};

    /// 5.8's memory.stat: workingset_restore printed for both halves (8d3fe09d8d66 fixed it).
    #[test]
    fn a_key_printed_twice_fails_naming_group_file_and_key() {
        let text = "anon 4096\nworkingset_restore 3\nworkingset_restore 0\nfile 0\n";
        assert_eq!(
            repeated_keys(text),
            vec![("workingset_restore".to_string(), 2)]
        );
        assert!(repeated_keys("anon 1\nfile 2\n").is_empty());
        let machine = crate::model::Machine {
            cpus: 2,
            page_size: 4096,
            node_drift_pages: 48,
            lru_gen: false,
            top_flushed: true,
        };
        let mut rec = Record::bare(
            crate::model::Series::new(vec![]),
            machine,
            crate::model::Version::V2,
        );
        assert_eq!(interface("i".into(), &rec).outcome, Outcome::NotExercised);
        rec.repeated = Some(vec![]);
        assert_eq!(interface("i".into(), &rec).outcome, Outcome::Pass);
        rec.repeated = Some(vec![RepeatedKey {
            group: "g".into(),
            file: "memory.stat".into(),
            key: "workingset_restore".into(),
            times: 2,
        }]);
        let r = interface("i".into(), &rec);
        assert_eq!(r.outcome, Outcome::Fail);
        assert_eq!(
            r.actual,
            "g's memory.stat prints workingset_restore 2 times"
        );
    }
}
