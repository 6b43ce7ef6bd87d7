//! notifies and notified: v2's file-modified events and v1's eventfd notifications.

use super::*;

// ---- notifies

/// v2 group a whose OOM kills (memory.events) go 0 -> 1 at t=1.0, its own (memory.events.local)
/// too where `local`; the event files signalled as `notices` say.
fn events(local: bool, notices: Vec<Notice>) -> Record {
    let cols = ["a.oom_kills", "a.oom_kills.local"];
    let rose = |c: &str, t: f64| t >= 1.0 && (local || c == "a.oom_kills");
    let mut r = sampled(&cols, |c, t| rose(c, t) as i64);
    r.notices = Some(notices);
    r
}

fn notifies(rec: &Record) -> CheckResult {
    judge(Notifies { cgroup: "a".into() }, rec)
}

/// Both of a's event files signalled at 1.02 s.
fn both() -> Vec<Notice> {
    let file = |f| notice(1.02, "a", f);
    vec![file("memory.events"), file("memory.events.local")]
}

#[test]
fn each_rise_with_its_files_event_passes() {
    let c = notifies(&events(true, both()));
    passes(&c, "2 rises, each with its file's event");
    let promises = ["v2.events.notify", "v2.events.local-notify"];
    assert_eq!(c.promises, promises);
}

#[test]
fn a_rise_without_a_file_modified_event_fails_with_the_counter_and_the_time() {
    let why = "a.oom_kills rose from 0 to 1 between t=0.900s and t=1.000s (phase move), and a's memory.events raised no file-modified event then or within 1 s";
    // None on memory.events; one too late; one on another group's file.
    for missed in [
        notice(1.02, "a", "memory.events.local"),
        notice(2.5, "a", "memory.events"),
        notice(1.02, "b", "memory.events"),
    ] {
        let c = notifies(&events(true, vec![missed]));
        fails(&c, "no file-modified event", why, "v2.events.notify");
        assert_eq!(c.at, Some(1.0));
    }
}

#[test]
fn a_local_event_without_a_local_rise_fails() {
    // A child's OOM kill: a's hierarchical count rose, its own did not, yet .local signalled.
    let c = notifies(&events(false, both()));
    let why = "a's memory.events.local raised a file-modified event at t=1.020s (phase move), but none of its own counts there rose within 1 s of it";
    fails(&c, "no file-modified event", why, "v2.events.local-notify");
    assert_eq!(c.at, Some(1.02));
}

#[test]
fn event_files_with_no_rise_or_not_watched_are_not_exercised() {
    let mut quiet = sampled(&["a.oom_kills", "a.oom_kills.local"], |_, _| 0);
    quiet.notices = Some(vec![]);
    idle(&notifies(&quiet), "none of a's event counts rose");
    let mut v1 = events(true, vec![]);
    (v1.version, v1.notices) = (Version::V1, None);
    let c = notifies(&v1);
    idle(&c, "the event files were not watched (cgroup v1)");
}

// ---- notified

const THRESHOLD: &str = "memory.usage_in_bytes 32M";

/// notified for `cgroup`'s `listen` (with `never`) on `rec`.
fn notified(cgroup: &str, listen: &str, never: bool, rec: &Record) -> CheckResult {
    let (cgroup, listen) = (cgroup.into(), listen.into());
    let spec = Notified {
        cgroup,
        listen,
        never,
    };
    judge(spec, rec)
}

/// The usage threshold of a, notified as `rec` says.
fn threshold(rec: &Record) -> CheckResult {
    notified("a", THRESHOLD, false, rec)
}

/// v1 group a at 16 MiB until t=1.0 and `then` after, listening for 32 MiB; notified at `at`.
fn crossing(then: i64, at: &[f64]) -> Record {
    let mut r = sampled(&["a.usage"], |_, t| if t < 1.0 { 16 * MIB } else { then });
    r.version = Version::V1;
    r.notices = Some(at.iter().map(|&t| notice(t, "a", THRESHOLD)).collect());
    r
}

#[test]
fn a_threshold_crossing_that_was_notified_passes() {
    let c = threshold(&crossing(48 * MIB, &[1.05]));
    let what = "1 crossings of 32.0 MiB, each notified; 1 notifications in all";
    passes(&c, what);
    assert_eq!(c.promises, vec!["v1.thresholds"]);
}

#[test]
fn a_threshold_crossed_without_a_notification_fails() {
    let c = threshold(&crossing(48 * MIB, &[]));
    let actual = "usage 16.0 MiB -> 48.0 MiB across 32.0 MiB: no notification";
    let why = "a's usage went from 16.0 MiB to 48.0 MiB across the 32.0 MiB threshold between t=0.900s and t=1.000s, and no notification came";
    fails(&c, actual, why, "v1.thresholds");
    assert_eq!(c.at, Some(1.0));
    // A notification long after, with the usage far from the threshold, is a stray one.
    let c = threshold(&crossing(48 * MIB, &[1.05, 2.5]));
    let actual = "a notification at t=2.500s with usage 48.0 MiB..48.0 MiB, not near 32.0 MiB";
    let why = "farther than 1.5 MiB from the 32.0 MiB threshold";
    fails(&c, actual, why, "v1.thresholds");
}

/// The usage rises through the threshold's margin at one sample (16 -> 32 -> 48 MiB, not
/// notified), then drops straight back at t=2.0 (notified): two crossings, one without its
/// notification, yet only the drop is counted and the check passes.
#[test]
fn a_threshold_crossed_over_several_samples_is_judged() {
    let mut rec = crossing(48 * MIB, &[2.02]);
    rec.series = Series::new(vec!["a.usage".into()]);
    for i in 0..30 {
        let usage = if i >= 20 {
            16
        } else {
            16 * i.clamp(9, 11) - 128
        };
        rec.series.push(i as f64 * 0.1, &[usage * MIB]);
    }
    let c = threshold(&rec);
    assert_eq!(c.outcome, Outcome::Fail, "{c:?}");
}

#[test]
fn a_threshold_never_crossed_or_a_listener_refused_is_not_exercised() {
    let c = threshold(&crossing(31 * MIB, &[]));
    idle(&c, "a's usage never crossed 32.0 MiB by more than 1.5 MiB");
    let mut refused = crossing(48 * MIB, &[]);
    let mut n = notice(0.0, "a", THRESHOLD);
    n.refused = Some("EINVAL writing 3 32M".into());
    refused.notices = Some(vec![n]);
    let c = threshold(&refused);
    idle(&c, "the kernel refused the listener: EINVAL");
    let mut unheard = crossing(48 * MIB, &[]);
    unheard.notices = None;
    idle(&threshold(&unheard), "nothing was listened to");
}

/// v1 group a: an exhaust step at 1.0..2.0 s killed `killed` tasks; OOM notifications at `at`.
fn oom(killed: u32, at: &[f64]) -> Record {
    let mut r = crossing(0, &[]);
    r.steps = vec![exhausts("a", (1.0, 2.0), killed)];
    let heard = at.iter().map(|&t| notice(t, "a", "memory.oom_control"));
    r.notices = Some(heard.collect());
    r
}

#[test]
fn an_oom_is_notified_when_and_only_when_it_happens() {
    let listens = |rec: &Record| notified("a", "memory.oom_control", false, rec);
    passes(&listens(&oom(1, &[1.5])), "1 OOMs, each notified");
    let c = listens(&oom(1, &[]));
    let actual = "an OOM at t=1.000..2.000s: no notification";
    let why = "an OOM in a between t=1.000s and t=2.000s was not notified";
    fails(&c, actual, why, "v1.oom_control.notify");
    assert_eq!(c.at, Some(2.0));
    // One before the OOM, or with no OOM at all: stray.
    for rec in [oom(1, &[0.5, 1.5]), oom(0, &[0.5])] {
        let actual = "an OOM notification at t=0.500s, no OOM";
        let why = "came at t=0.500s, outside every OOM of a";
        fails(&listens(&rec), actual, why, "v1.oom_control.notify");
    }
    idle(&listens(&oom(0, &[])), "no OOM happened in a");
}

/// v1 groups p and p/c (limit 16 MiB); a read in p/c at 1.0..2.0 s during which p/c's failcnt
/// rose by `hits`; the listeners notified as `heard` says.
fn pressure(hits: i64, heard: Vec<Notice>) -> Record {
    let cols = ["p.limit_hits", "p/c.limit_hits"];
    let rose = |c: &str, t: f64| c == "p/c.limit_hits" && t > 1.5;
    let mut r = sampled(&cols, |c, t| if rose(c, t) { hits } else { 0 });
    r.version = Version::V1;
    r.cgroups = vec![group("p", None, None), group("p/c", Some(16 * MIB), None)];
    r.steps = vec![step(StepKind::Read, "p/c", 1.0, 2.0)];
    r.notices = Some(heard);
    r
}

#[test]
fn pressure_below_a_hierarchy_listener_is_notified_and_a_local_one_hears_none() {
    const UP: &str = "memory.pressure_level low,hierarchy";
    const LOCAL: &str = "memory.pressure_level low,local";
    let up = |rec: &Record| notified("p", UP, false, rec);
    let local = |rec: &Record| notified("p", LOCAL, true, rec);
    let c = up(&pressure(1000, vec![notice(1.5, "p", UP)]));
    passes(&c, "1 steps reclaimed, each notified (1 notifications)");
    let c = local(&pressure(1000, vec![]));
    passes(&c, "no notification, as none may come");
    // Not notified; notified where none may come.
    let c = up(&pressure(1000, vec![]));
    let actual = "reclaim at t=1.000..2.000s: no low,hierarchy notification";
    let why = "p reclaimed at a limit between t=1.000s and t=2.000s and no low,hierarchy notification came";
    fails(&c, actual, why, "v1.pressure_level");
    let c = local(&pressure(1000, vec![notice(1.5, "p", LOCAL)]));
    let actual = "a low,local notification at t=1.500s";
    let why = "a low,local notification came at t=1.500s, where none may come";
    fails(&c, actual, why, "v1.pressure_level");
    // Fewer than 512 limit hits: no reclaim at a limit, either way.
    idle(&up(&pressure(100, vec![])), "p never reclaimed at a limit");
    idle(&local(&pressure(100, vec![])), "nothing below p reclaimed");
}

/// A rise and a drop through the threshold between two reads of the eventfd: one notice whose
/// count is 2 answers both crossings; with a count of 1 the second crossing is unanswered.
#[test]
fn one_notice_counting_two_signals_answers_two_crossings() {
    let mut rec = crossing(48 * MIB, &[]);
    rec.series = Series::new(vec!["a.usage".into()]);
    for i in 0..30 {
        let usage = if (10..20).contains(&i) { 48 } else { 16 };
        rec.series.push(i as f64 * 0.1, &[usage * MIB]);
    }
    let mut n = notice(1.95, "a", "memory.usage_in_bytes 32M");
    n.count = 2;
    rec.notices = Some(vec![n.clone()]);
    assert_eq!(threshold(&rec).outcome, Outcome::Pass);
    n.count = 1;
    rec.notices = Some(vec![n]);
    assert_eq!(threshold(&rec).outcome, Outcome::Fail);
}
