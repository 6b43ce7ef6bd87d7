//! What the rest of the machine did while a measured step ran (see `model::Load`): counters read
//! right before and right after the step.

use std::path::Path;
use std::time::Instant;

use crate::model::Load;
use crate::sys::cgroup::Cgroup;
use crate::sys::hostload::{self, HostReading};
use crate::sys::proc::{
    self, MachineCounters, Who, cpu_seconds, machine_counters, user_seconds_of,
};

/// The machine's counters and the run's own user CPU time at one moment.
pub(super) struct LoadProbe {
    at: Instant,
    machine: MachineCounters,
    /// User CPU seconds of this process, its reaped workers and the live tasks of its groups.
    ours: f64,
    /// Under `memcgtest vm`, the host's published load.
    host: Option<HostReading>,
}

impl LoadProbe {
    /// Reads the counters now; `root` is the scenario's top group (its workers and held tasks).
    /// None where /proc cannot tell (the step is then recorded without a load).
    pub(super) fn read(root: &Cgroup) -> Option<LoadProbe> {
        let proc_root = Path::new(proc::PROC);
        let machine = machine_counters(proc_root).ok()?;
        let live = root.pids_below().unwrap_or_default();
        let ours = cpu_seconds(Who::Process).0
            + cpu_seconds(Who::Children).0
            + user_seconds_of(proc_root, &live);
        Some(LoadProbe {
            at: Instant::now(),
            machine,
            ours,
            host: hostload::read(),
        })
    }

    /// The load from `start` to this probe, for a step that wrote `written` bytes itself.
    pub(super) fn since(&self, start: &LoadProbe, written: u64, page_size: u64) -> Load {
        let mut l = load(
            (&start.machine, start.ours),
            (&self.machine, self.ours),
            self.at.duration_since(start.at).as_secs_f64(),
            written / page_size.max(1),
            page_size,
        );
        l.host = start
            .host
            .zip(self.host)
            .map(|(a, b)| hostload::between(&a, &b));
        l
    }
}

/// The load between two readings `seconds` apart: other processes' user CPU (the machine's minus
/// ours), the pages they dirtied (the machine's minus the step's own), the PSI shares.
fn load(
    (m0, ours0): (&MachineCounters, f64),
    (m1, ours1): (&MachineCounters, f64),
    seconds: f64,
    own_pages: u64,
    page_size: u64,
) -> Load {
    let s = seconds.max(1e-3);
    let others_cpu = (m1.user_seconds - m0.user_seconds) - (ours1 - ours0);
    let others_pages = (m1.dirtied_pages - m0.dirtied_pages - own_pages as i64).max(0);
    let share = |a: Option<u64>, b: Option<u64>| {
        Some((b?.saturating_sub(a?)) as f64 / 1e6 / s).map(|x| x.min(1.0))
    };
    Load {
        others_cpus: (others_cpu / s).max(0.0),
        others_dirtied_mb_s: others_pages as f64 * page_size as f64 / 1e6 / s,
        others_dirtied_mb: others_pages as f64 * page_size as f64 / 1e6,
        cpu_pressure: share(m0.cpu_some_us, m1.cpu_some_us),
        io_pressure: share(m0.io_some_us, m1.io_some_us),
        host: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::HostLoad;

    #[test]
    fn others_are_the_machine_minus_the_run() {
        let m = |user, dirtied, cpu| MachineCounters {
            user_seconds: user,
            dirtied_pages: dirtied,
            cpu_some_us: cpu,
            io_some_us: None,
        };
        // 2 s: the machine used 3 CPU-seconds of user time, the run 1; 10000 pages dirtied, the
        // step wrote 2000 of them itself; some task waited for a CPU 0.5 s.
        let l = load(
            (&m(10.0, 0, Some(0)), 5.0),
            (&m(13.0, 10_000, Some(500_000)), 6.0),
            2.0,
            2000,
            4096,
        );
        assert!((l.others_cpus - 1.0).abs() < 1e-9, "{l:?}");
        assert!((l.others_dirtied_mb_s - 8000.0 * 4096.0 / 1e6 / 2.0).abs() < 1e-9);
        assert_eq!(l.cpu_pressure, Some(0.25));
        assert_eq!(l.io_pressure, None);
        assert!(l.busy());
        // Only the run's own work: quiet.
        let l = load(
            (&m(10.0, 0, None), 5.0),
            (&m(11.0, 2000, None), 6.0),
            2.0,
            2000,
            4096,
        );
        assert_eq!(l.others_cpus, 0.0);
        assert_eq!(l.others_dirtied_mb_s, 0.0);
        assert!(!l.busy());
        // Quiet in the guest, busy on the host beside the VM.
        let h = |cpus| HostLoad {
            cpus,
            ..Default::default()
        };
        assert!(
            !Load {
                host: Some(h(0.1)),
                ..l
            }
            .busy()
        );
        let l = Load {
            host: Some(h(0.9)),
            ..l
        };
        assert!(l.busy());
        assert!(l.describe().contains("on the host beside the VM 0.90 CPUs"));
    }
}
