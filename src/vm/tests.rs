//! Tests of the VM runner: guest command, verdicts, splats, the typed report.
use super::*;

#[test]
fn ldd_output_is_parsed() {
    let t = "\tlinux-vdso.so.1 (0x00007ffd)\n\tlibgcc_s.so.1 => /lib/x86_64-linux-gnu/libgcc_s.so.1 (0x1)\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x2)\n\t/lib64/ld-linux-x86-64.so.2 (0x3)\n";
    assert_eq!(
        parse_ldd(t),
        [
            "/lib/x86_64-linux-gnu/libgcc_s.so.1",
            "/lib/x86_64-linux-gnu/libc.so.6",
            "/lib64/ld-linux-x86-64.so.2"
        ]
    );
    assert!(parse_ldd("\tnot a dynamic executable\n").is_empty());
}

#[test]
fn guest_command_adds_the_vm_options() {
    let a = guest_command(&["run".into(), "--quick".into()], "v2", true, true).unwrap();
    assert_eq!(
        a.join(" "),
        "run --cgroup v2 --scratch /scratch --slow-scratch /slow --scenario-dir /scenarios --events --dedicated --report /scratch/report --quick"
    );
    let a = guest_command(&["run".into(), "--format=json".into()], "v1", false, false);
    assert_eq!(
        a.unwrap().join(" "),
        "run --cgroup v1 --scratch /scratch --slow-scratch /slow --events --dedicated --format=json"
    );
    assert_eq!(guest_command(&[], "v1", false, false).unwrap()[0], "run");
    assert_eq!(
        guest_command(&["env".into()], "v1", false, true)
            .unwrap()
            .join(" "),
        "env --cgroup v1 --scratch /scratch --slow-scratch /slow"
    );
    assert!(guest_command(&["rm".into()], "v1", false, false).is_err());
    let scratch = guest_command(&["run".into(), "--scratch=/x".into()], "v1", false, false);
    assert!(scratch.is_err());
    let slow = guest_command(&["run".into(), "--slow-scratch".into()], "v1", false, false);
    assert!(slow.is_err());
    assert!(guest_command(&["run".into(), "--events".into()], "v1", false, false).is_err());
}

/// A boot whose guest streamed `events` and exited with `status` (None: it died).
fn streamed(status: Option<u8>, events: &str) -> Boot {
    Boot {
        status,
        events: events::tests::fed(events.as_bytes()),
        console: "[0.0] Linux version 6.12\n".into(),
        ..Default::default()
    }
}

fn warning_in_a() -> Vec<(String, String)> {
    vec![(
        "a".to_string(),
        "kernel WARNING during the scenario: WARNING: CPU: 1 PID: 7 at mm/memcontrol.c:1"
            .to_string(),
    )]
}

#[test]
fn a_splat_fails_the_scenario_in_stdout_and_every_report_file_alike() {
    use crate::report::{Format, render};
    let work = tempfile::tempdir().unwrap();
    let dest = tempfile::tempdir().unwrap();
    let read = |f: &str| std::fs::read_to_string(dest.path().join(f)).unwrap();
    for (format, file) in [
        (Format::Ktap, "results.ktap"),
        (Format::Json, "results.json"),
        (Format::Junit, "results.xml"),
        (Format::Kcidb, "kcidb.json"),
    ] {
        let b = streamed(Some(0), &events::tests::run_events(format));
        let (rep, f) = typed_report(&b, "", &warning_in_a()).unwrap();
        assert_eq!(f, format);
        write_report(
            &rep,
            work.path(),
            Path::new("/nonexistent"),
            false,
            dest.path(),
        )
        .unwrap();
        assert_eq!(render(&rep, f), read(file), "{format:?}");
    }
    assert!(read("results.ktap").contains("not ok 1 a"));
    assert!(read("results.ktap").contains("# Totals: pass:0 fail:2"));
    assert!(read("index.html").contains("kernel WARNING during the scenario"));
    let b = streamed(Some(0), &events::tests::run_events(Format::Human));
    let (rep, f) = typed_report(&b, "", &warning_in_a()).unwrap();
    let human = render(&rep, f);
    assert!(human.contains("0 passed, 2 failed"), "{human}");
}

fn booted(status: Option<u8>, console: &str) -> Boot {
    Boot {
        status,
        console: console.into(),
        ..Default::default()
    }
}

/// Reproduction 11: a splat rewrote stdout to fail, but the copied --report still said ok.
/// The directory comes from the same typed report as stdout now; the SVG timeline is drawn on
/// the host from the samples the guest wrote (its CSV), with the verdict in its title.
#[test]
fn the_report_directory_gets_the_splat_verdict() {
    let work = tempfile::tempdir().unwrap();
    let dest = tempfile::tempdir().unwrap();
    let guest_dir = work.path().join("report");
    std::fs::create_dir_all(&guest_dir).unwrap();
    let csv = "t[s],test.dirty[B]\n0.0000,1\n0.5000,4096\n";
    std::fs::write(guest_dir.join("a.csv"), csv).unwrap();
    let b = streamed(
        Some(0),
        &events::tests::run_events(crate::report::Format::Human),
    );
    let (rep, _) = typed_report(&b, "", &warning_in_a()).unwrap();
    write_report(
        &rep,
        work.path(),
        Path::new("/nonexistent"),
        false,
        dest.path(),
    )
    .unwrap();
    let read = |f: &str| std::fs::read_to_string(dest.path().join(f)).unwrap();
    assert!(read("results.ktap").contains("not ok 1 a\n"));
    let j: serde_json::Value = serde_json::from_str(&read("results.json")).unwrap();
    assert_eq!(j["scenarios"][0]["status"], "fail");
    assert_eq!(j["totals"]["failed"], 2);
    let svg = read("a.svg");
    assert!(
        svg.contains(">fail</tspan>") && svg.contains("<polyline") && svg.contains("2 samples"),
        "{svg}"
    );
    assert_eq!(read("a.csv"), csv);
}

/// The guest panicked in scenario b: the report says a passed and b failed with the panic,
/// stdout in the guest's format; the exit is the verdict's 1.
#[test]
fn a_guest_that_died_mid_run_fails_the_scenario_it_was_in() {
    let all = events::tests::run_events(crate::report::Format::Ktap);
    let cut = all
        .find("{\"memcgtest\":3,\"event\":\"step\",\"scenario\":\"b\"")
        .unwrap();
    let mut b = streamed(None, &all[..cut]);
    b.console += "[ 9.0] Kernel panic - not syncing: sysrq triggered crash\n";
    let t = Duration::from_secs(60);
    let v = verdict(&b, t);
    let (code, reason) = (v.exit_code(), v.to_string());
    assert_eq!(code, 1);
    let (rep, _) = typed_report(&b, &reason, &[]).unwrap();
    let k = crate::report::ktap(&rep);
    assert!(k.contains("ok 1 a\n") && k.contains("not ok 2 b\n"), "{k}");
    assert!(
        k.contains(
            "# b: failed: kernel panic: Kernel panic - not syncing: sysrq triggered crash\n"
        ),
        "{k}"
    );
    // A hang: the timeout is the reason.
    let mut hung = streamed(None, &all[..cut]);
    hung.timed_out = true;
    let v = verdict(&hung, t);
    let (code, reason) = (v.exit_code(), v.to_string());
    assert_eq!(code, 1);
    let (rep, _) = typed_report(&hung, &reason, &[]).unwrap();
    assert!(
        rep.scenarios[1]
            .reason
            .starts_with("timeout: the guest did not finish within 60s")
    );
    assert!(!rep.scenarios[1].reason.contains('\n'));
}

#[test]
fn lines_that_are_no_events_make_a_passing_run_125_and_leave_failures_1() {
    let garbage = events::tests::fed(b"ok 1 a\n").errors;
    assert_eq!(garbage.len(), 1);
    assert_eq!(with_stream_errors(exit::OK, &garbage), exit::UNTESTABLE);
    assert_eq!(with_stream_errors(exit::FAIL, &garbage), exit::FAIL);
    assert_eq!(with_stream_errors(exit::USAGE, &garbage), exit::USAGE);
    assert_eq!(with_stream_errors(exit::OK, &[]), exit::OK);
}

/// Reproduction 11: a soft lockup was fatal even with --allow-splats; it is a splat now.
#[test]
fn a_soft_lockup_is_not_fatal() {
    let t = Duration::from_secs(60);
    let log =
        "[0.0] Linux version 6.12\n[5.0] watchdog: BUG: soft lockup - CPU#0 stuck for 22s! [x:1]\n";
    assert_eq!(verdict(&booted(Some(0), log), t).exit_code(), 0);
    let log = "[0.0] Linux version 6.12\n[5.0] BUG: kernel NULL pointer dereference, address: 0\n";
    assert_eq!(verdict(&booted(Some(0), log), t).exit_code(), 1);
}

#[test]
fn verdicts() {
    let t = Duration::from_secs(60);
    let ok = "[0.0] Linux version 6.12\n";
    assert_eq!(verdict(&booted(Some(0), ok), t).exit_code(), 0);
    assert_eq!(verdict(&booted(Some(2), ok), t).exit_code(), 2);
    assert_eq!(verdict(&booted(Some(125), ok), t).exit_code(), 125);
    let p = verdict(
        &booted(
            None,
            &format!("{ok}[1.0] Kernel panic - not syncing: sysrq triggered crash\n"),
        ),
        t,
    );
    assert_eq!(p.exit_code(), 1);
    assert!(p.to_string().starts_with("kernel panic"));
    let mut hung = booted(None, ok);
    hung.timed_out = true;
    let h = verdict(&hung, t);
    assert_eq!(h.exit_code(), 1);
    assert!(h.to_string().starts_with("timeout"));
    let dead = verdict(&booted(None, ""), t);
    assert_eq!(dead.exit_code(), 125);
    assert!(dead.to_string().contains("did not start"));
    assert_eq!(verdict(&booted(None, ok), t).exit_code(), 1);
    // An oops kills the runner (the guest then reports 125): still a bad kernel.
    let oops = verdict(
        &booted(
            Some(125),
            &format!("{ok}[2.0] Oops: general protection fault\n"),
        ),
        t,
    );
    assert_eq!(oops.exit_code(), 1);
    assert_eq!(verdict(&booted(Some(77), ok), t).exit_code(), 1);
}
