use super::*;
use crate::model::PhaseMeasure;

fn phase(name: &str, start: f64, end: f64) -> PhaseResult {
    PhaseResult {
        measure: PhaseMeasure {
            name: name.into(),
            bytes: 0,
            seconds: 0.0,
            mb_per_s: None,
            samples_mb_per_s: Vec::new(),
            wall_seconds: end - start,
        },
        antagonists: Vec::new(),
        vmstat_delta: Vec::new(),
        start,
        end,
    }
}

/// A boot of one scenario "s" whose group "g" shows `percpu` (bytes, a level) and
/// `oom_kills` (events) as given at t = 0, 1 (end of phase "fill"), 2 (end of "hold"), and 4 KiB
/// of file in its memory.numa_stat.
fn boot(percpu: [i64; 3], kills: [i64; 3]) -> Boot {
    let mut s = Series::named(&[
        "g.percpu",
        "g.oom_kills",
        "aux.percpu",
        "vmstat.pgfault",
        "vmstat.pre.pgfault",
        "numa.g.file",
        "numa.pre.g.file",
        "numa.g.workingset_refault_file",
    ]);
    for (i, t) in [0.0, 1.0, 2.0].into_iter().enumerate() {
        s.push(
            t,
            &[
                percpu[i],
                kills[i],
                7,
                100 * i as i64,
                0,
                4096,
                0,
                5 * i as i64,
            ],
        );
    }
    let mut b = Boot {
        cpus: 2,
        page_size: 4096,
        ..Boot::default()
    };
    observe(
        &mut b,
        "s",
        &[phase("fill", 0.0, 1.0), phase("hold", 1.0, 2.0)],
        &s,
    );
    b
}

fn key(phase: &str, group: &str, counter: &str, measure: Measure) -> Observable {
    Observable {
        scenario: "s".into(),
        phase: phase.into(),
        group: group.into(),
        counter: counter.into(),
        measure,
    }
}

#[test]
fn levels_are_read_at_each_phase_end_and_events_as_their_change_over_it() {
    let b = boot([0, 8 << 20, 6 << 20], [0, 1, 3]);
    let v = |p, g, c, m| b.values.get(&key(p, g, c, m)).copied();
    assert_eq!(v("fill", "g", "percpu", Measure::Level), Some(8 << 20));
    assert_eq!(v("hold", "g", "percpu", Measure::Level), Some(6 << 20));
    assert_eq!(v(END, "g", "percpu", Measure::Level), Some(6 << 20));
    assert_eq!(v("hold", "g", "oom_kills", Measure::Delta), Some(2));
    assert_eq!(v(END, "g", "oom_kills", Measure::Delta), Some(3));
    assert_eq!(v("fill", MACHINE, "pgfault", Measure::Delta), Some(100));
    assert_eq!(v("fill", "g", "numa_stat.file", Measure::Level), Some(4096));
    // memory.numa_stat's workingset counters are events, per node.
    let refaults = "numa_stat.workingset_refault_file";
    assert_eq!(v("hold", "g", refaults, Measure::Delta), Some(5));
    // The helpers' group and the reads before the groups are no observables.
    assert!(b.values.keys().all(|k| k.group != HELPER_GROUP));
    assert_eq!(b.values.len(), 5 * 3);
}

#[test]
fn a_repeated_phase_name_is_numbered() {
    let mut s = Series::named(&["g.percpu"]);
    s.push(0.0, &[1]);
    s.push(1.0, &[2]);
    s.push(2.0, &[3]);
    let mut b = Boot::default();
    observe(
        &mut b,
        "s",
        &[phase("p", 0.0, 1.0), phase("p", 1.0, 2.0)],
        &s,
    );
    assert_eq!(
        b.values.get(&key("p#2", "g", "percpu", Measure::Level)),
        Some(&3)
    );
}

fn changes(base: &[Boot], new: &[Boot]) -> Vec<Change> {
    judge(base, new, NOISE, SHIFT_BOOTS).0
}

#[test]
fn the_same_kernel_within_its_noise_is_no_change() {
    let base: Vec<Boot> = (0..6)
        .map(|i| boot([0, (8 << 20) + i * 40960, 6 << 20], [0, 1, 1]))
        .collect();
    let new: Vec<Boot> = (0..6)
        .map(|i| boot([0, (8 << 20) - i * 40960, 6 << 20], [0, 1, 1]))
        .collect();
    let (c, judged) = judge(&base, &new, NOISE, SHIFT_BOOTS);
    assert!(c.is_empty(), "{c:?}");
    assert_eq!(judged, 15);
}

#[test]
fn a_halved_amount_is_a_shift_with_enough_boots_and_a_candidate_with_fewer() {
    let base: Vec<Boot> = (0..6)
        .map(|i| boot([0, (8 << 20) + i * 4096, 0], [0, 0, 0]))
        .collect();
    let new: Vec<Boot> = (0..6)
        .map(|i| boot([0, (4 << 20) + i * 2048, 0], [0, 0, 0]))
        .collect();
    let c = changes(&base, &new);
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(c[0].kind, ChangeKind::Shifted);
    assert_eq!(c[0].what, key("fill", "g", "percpu", Measure::Level));
    assert!(c[0].line().contains("-50.0 %"), "{}", c[0].line());
    // Three a side: enough to make ab run its second set, not to report.
    assert!(changes(&base[..3], &new[..3]).is_empty());
    assert_eq!(judge(&base[..3], &new[..3], NOISE, MIN_BOOTS).0.len(), 1);
}

#[test]
fn sides_that_overlap_or_whose_gap_is_within_their_spread_are_no_change() {
    // Overlap: one new boot among the base's values.
    let b: Vec<i64> = vec![100, 110, 120, 130, 140, 150];
    assert_eq!(
        shifted(&b, &[145, 200, 210, 220, 230, 240], 0.0, NOISE),
        None
    );
    // Apart, but the gap (10) is less than the base's own spread (50).
    assert_eq!(
        shifted(&b, &[160, 161, 162, 163, 164, 165], 0.0, NOISE),
        None
    );
    // Apart by more than either spread, and more than a tenth of the larger median.
    assert_eq!(
        shifted(&b, &[300, 301, 302, 303, 304, 305], 0.0, NOISE),
        Some(ChangeKind::Shifted)
    );
    // Apart, but less than the floor: the memcg statistics' lag.
    assert_eq!(
        shifted(&b, &[300, 301, 302, 303, 304, 305], 1e6, NOISE),
        None
    );
    // The same value in every boot of each side.
    assert_eq!(
        shifted(&[0, 0, 0], &[512, 512, 512], 64.0, NOISE),
        Some(ChangeKind::Exact)
    );
    // However small: the same in every boot is no noise. Within a tenth of it is.
    assert_eq!(
        shifted(&[1, 1, 1], &[2, 2, 2], 64.0, NOISE),
        Some(ChangeKind::Exact)
    );
    assert_eq!(shifted(&[100, 100, 100], &[95, 95, 95], 64.0, NOISE), None);
}

#[test]
fn a_key_every_base_boot_shows_and_no_new_boot_has_vanished() {
    let base: Vec<Boot> = (0..3).map(|_| boot([0, 1, 2], [0, 0, 0])).collect();
    let mut new = base.clone();
    // Three boots a side are enough for a key, not for an amount.
    new[1] = boot([0, 1, 9 << 20], [0, 0, 0]);
    new[2] = new[1].clone();
    new[0] = new[1].clone();
    assert!(changes(&base, &new).is_empty());
    for b in &mut new {
        b.values.retain(|k, _| k.counter != "oom_kills");
    }
    let c = changes(&base, &new);
    assert_eq!(c.len(), 3, "{c:?}");
    assert!(
        c.iter()
            .all(|c| c.kind == ChangeKind::Vanished && c.new.is_none())
    );
    assert_eq!(changes(&new, &base)[0].kind, ChangeKind::Appeared);
    // Shown by some new boots only: no verdict.
    new[0] = base[0].clone();
    assert!(changes(&base, &new).is_empty());
}

#[test]
fn a_scenario_a_boot_did_not_run_is_no_vanished_key() {
    let base: Vec<Boot> = (0..3).map(|_| boot([0, 1, 2], [0, 0, 0])).collect();
    let mut new = base.clone();
    new.push(Boot::default());
    assert!(changes(&base, &new).is_empty());
    // Two boots that ran it are too few for a verdict.
    let (c, judged) = judge(&base, &new[2..], NOISE, SHIFT_BOOTS);
    assert!(c.is_empty() && judged == 0);
}

#[test]
fn report_directories_are_the_path_itself_or_its_subdirectories_with_results() {
    let d = tempfile::tempdir().unwrap();
    for n in ["base-1", "base-2", "new-1", "other"] {
        std::fs::create_dir(d.path().join(n)).unwrap();
    }
    for n in ["base-2", "base-1", "new-1"] {
        std::fs::write(d.path().join(n).join("results.json"), "{}").unwrap();
    }
    let names = |p: &str| -> Vec<String> {
        (report_dirs(d.path(), p).unwrap().iter())
            .map(|x| x.file_name().unwrap().to_string_lossy().into_owned())
            .collect()
    };
    assert_eq!(names("base-"), ["base-1", "base-2"]);
    assert_eq!(names(""), ["base-1", "base-2", "new-1"]);
    let one = report_dirs(&d.path().join("new-1"), "").unwrap();
    assert_eq!(one, [d.path().join("new-1")]);
}

/// A change's one line (model::behaviour::Change::line): the observable, both sides, the size.
#[test]
fn a_change_reads_in_one_line_with_both_sides_and_its_size() {
    let c = crate::model::fixtures::percpu_change(&[4 << 20, 4 << 20, 5 << 20], &[2 << 20; 3]);
    let l = c.line();
    assert!(
        l.starts_with("behaviour changed (shifted): kernel-memory: parent.percpu at the end of phase groups: base 4.0 MiB (4.0 MiB..5.0 MiB, 3 boots) -> new 2.0 MiB (3 boots), -50.0 %"),
        "{l}"
    );
}
