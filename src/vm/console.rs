//! Reading the guest's kernel console: splats (BUG, WARNING, Oops, panics, RCU stalls, soft
//! lockups, hung tasks), which scenario was running when each happened (the guest writes
//! "memcgtest: begin NAME" / "memcgtest: end NAME" to /dev/kmsg around every scenario), and the
//! excerpts printed when something went wrong.

/// Where the guest's runner marks scenario boundaries in the kernel log.
pub const BEGIN: &str = "memcgtest: begin ";
pub const END: &str = "memcgtest: end ";

/// A kernel splat found in the console log.
#[derive(Debug, Clone, PartialEq)]
pub struct Splat {
    /// 0-based line in the log.
    pub line: usize,
    /// What kind: "BUG", "WARNING", "Oops", "kernel panic", "RCU stall", "soft lockup", ...
    pub kind: &'static str,
    /// The scenario that was running, if any.
    pub scenario: Option<String>,
    /// The splat's first line and what follows it.
    pub excerpt: String,
}

/// First match wins: the specific reports ("BUG: soft lockup", "BUG: workqueue lockup") come
/// before the generic "BUG:".
const PATTERNS: &[(&str, &str)] = &[
    ("Kernel panic - not syncing", "kernel panic"),
    ("soft lockup - CPU", "soft lockup"),
    ("hard LOCKUP", "hard lockup"),
    ("rcu_sched self-detected stall", "RCU stall"),
    ("rcu_preempt self-detected stall", "RCU stall"),
    ("detected stalls on CPUs/tasks", "RCU stall"),
    ("blocked for more than", "hung task"),
    ("BUG:", "BUG"),
    ("kernel BUG at", "BUG"),
    ("WARNING:", "WARNING"),
    ("Oops:", "Oops"),
    ("Oops ", "Oops"),
    ("general protection fault", "general protection fault"),
    ("Memory cgroup out of memory", "memcg OOM"),
];

/// Splats that make the whole run bad whenever they happen (the kernel is broken: exit 1 even
/// with --allow-splats). The others (WARNING, RCU stall, soft/hard lockup, hung task) fail the
/// scenario they happened in, unless --allow-splats.
pub fn is_fatal(kind: &str) -> bool {
    matches!(kind, "Oops" | "BUG" | "general protection fault")
}

/// The message part of a console line (after a "[    1.234567] " timestamp, if any).
fn message(line: &str) -> &str {
    let l = line.trim_start();
    if l.starts_with('[')
        && let Some(i) = l.find("] ")
    {
        return &l[i + 2..];
    }
    l
}

/// The splats in a console log, each with the scenario running at the time.
pub fn splats(log: &str) -> Vec<Splat> {
    let lines: Vec<&str> = log.lines().collect();
    let mut current: Option<String> = None;
    let mut out: Vec<Splat> = Vec::new();
    let mut skip_until = 0;
    for (i, line) in lines.iter().enumerate() {
        let m = message(line);
        if let Some(n) = m.strip_prefix(BEGIN) {
            current = Some(n.trim().to_string());
            continue;
        }
        if m.starts_with(END) {
            current = None;
            continue;
        }
        if i < skip_until {
            continue;
        }
        // A memcg OOM kill is a workload event, not a kernel bug: it is left to the checks.
        if let Some((_, kind)) = PATTERNS
            .iter()
            .find(|(p, _)| m.contains(p))
            .filter(|(_, k)| *k != "memcg OOM")
        {
            // The report runs to its end-of-trace line, the next scenario marker or 25 lines.
            let mut end = (i + 25).min(lines.len());
            for (k, l) in lines.iter().enumerate().take(end).skip(i + 1) {
                let lm = message(l);
                if lm.starts_with(BEGIN) || lm.starts_with(END) {
                    end = k;
                    break;
                }
                if lm.contains("---[ end trace") {
                    end = k + 1;
                    break;
                }
            }
            out.push(Splat {
                line: i,
                kind,
                scenario: current.clone(),
                excerpt: lines[i..end].join("\n"),
            });
            // The lines of one report (call trace, registers) belong to this splat.
            skip_until = end;
        }
    }
    out
}

/// The kernel panic message and what led to it, if the kernel panicked.
pub fn panic(log: &str) -> Option<String> {
    let lines: Vec<&str> = log.lines().collect();
    let i = lines
        .iter()
        .position(|l| l.contains("Kernel panic - not syncing"))?;
    let start = i.saturating_sub(20);
    Some(lines[start..=i].join("\n"))
}

/// Whether the kernel printed anything of its own (a booting kernel prints "Linux version").
pub fn kernel_started(log: &str) -> bool {
    log.contains("Linux version")
}

/// The last `n` lines of a log.
pub fn tail(log: &str, n: usize) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "[    0.000000] Linux version 6.12.117 (gcc 12)
[    4.100000] memcgtest: begin dirty-accounting
[    5.000000] memcgtest: end dirty-accounting
[    5.100000] memcgtest: begin dirty-migration
[    6.000000] ------------[ cut here ]------------
[    6.000001] WARNING: CPU: 1 PID: 77 at mm/memcontrol.c:123 folio_memcg_dirty+0x1/0x2
[    6.000002] Call Trace:
[    6.000003]  <TASK>
[    7.000000] memcgtest: end dirty-migration
[    8.000000] BUG: soft lockup - CPU#0 stuck for 22s! [kworker/0:1:12]
";

    #[test]
    fn splats_are_found_and_attributed() {
        let s = splats(LOG);
        assert_eq!(s.len(), 2, "{s:?}");
        assert_eq!(s[0].kind, "WARNING");
        assert_eq!(s[0].scenario.as_deref(), Some("dirty-migration"));
        assert!(s[0].excerpt.contains("Call Trace"));
        // Outside every scenario: reported, not attributed.
        assert_eq!(s[1].scenario, None);
    }

    /// Reproduction 11: "BUG: soft lockup" was classified as a fatal BUG (the soft-lockup
    /// pattern came after "BUG:" and was unreachable), so --allow-splats could not allow it.
    #[test]
    fn soft_lockups_and_rcu_stalls_are_splats_not_fatal_bugs() {
        let s = splats(LOG);
        assert_eq!(s[1].kind, "soft lockup");
        assert!(!is_fatal(s[1].kind));
        let rcu = "[ 9.0] rcu: INFO: rcu_preempt self-detected stall on CPU\n";
        assert_eq!(splats(rcu)[0].kind, "RCU stall");
        assert!(!is_fatal("RCU stall"));
        let bug = "[ 9.0] BUG: unable to handle page fault for address: 0\n";
        assert!(is_fatal(splats(bug)[0].kind));
        assert!(is_fatal(splats("[ 9.0] Oops: 0000 [#1] SMP\n")[0].kind));
    }

    #[test]
    fn clean_logs_have_no_splats() {
        let log = "[    0.0] Linux version 6.1\n[    1.0] memcgtest: begin a\n[    2.0] EXT4-fs (vda): mounted filesystem\n";
        assert!(splats(log).is_empty());
        assert!(panic(log).is_none());
        assert!(kernel_started(log));
        assert!(!kernel_started("qemu: could not load kernel"));
    }

    #[test]
    fn panic_is_recognized() {
        let log = "[ 1.0] sysrq: Trigger a crash\n[ 1.1] Kernel panic - not syncing: sysrq triggered crash\n";
        assert!(panic(log).unwrap().contains("sysrq triggered crash"));
        assert_eq!(splats(log)[0].kind, "kernel panic");
    }
}
