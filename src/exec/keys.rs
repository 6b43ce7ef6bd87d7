//! The keys of each declared group's flat-keyed files at the scenario's end, for the
//! `interface` invariant: a key printed twice is a counter that lost its name.

use crate::sys::cgroup::Cgroup;

/// The flat-keyed files of the declared groups (those the kernel has) and the keys each printed
/// more than once.
pub(super) fn repeated_keys(groups: &[(String, Cgroup)]) -> Vec<crate::model::record::RepeatedKey> {
    const FILES: [&str; 5] = [
        "memory.stat",
        "memory.numa_stat",
        "memory.events",
        "memory.events.local",
        "memory.swap.events",
    ];
    let mut out = Vec::new();
    for (name, cg) in groups {
        for file in FILES {
            let Ok(text) = std::fs::read_to_string(cg.path.join(file)) else {
                continue;
            };
            for (key, times) in crate::model::record::repeated_keys(&text) {
                out.push(crate::model::record::RepeatedKey {
                    group: name.clone(),
                    file: file.to_string(),
                    key,
                    times,
                });
            }
        }
    }
    out
}
