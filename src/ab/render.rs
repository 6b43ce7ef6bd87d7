use super::AbReport;
use crate::compare;

/// The human form: each boot, the comparison table (and the second set's, when one ran), the
/// verdict.
pub fn render(rep: &AbReport) -> String {
    let mut s = format!(
        "A/B: base {}\n     new  {}{}\n{} rounds{}, boots in the order A B, B A, ...\n\n",
        rep.base.display(),
        rep.new.display(),
        match rep.new_append.as_str() {
            "" => String::new(),
            a => format!(" (booted with {a})"),
        },
        rep.rounds,
        if rep.boots.iter().any(|b| b.round > rep.rounds) {
            format!(", then {} more: the first set found a change", rep.rounds)
        } else {
            String::new()
        }
    );
    for b in &rep.boots {
        s += &format!(
            "round {} {:<4} exit {:>3} {:>6.0} s  host busy {:.2} CPUs{}{}\n",
            b.round,
            b.side.as_str(),
            b.code,
            b.seconds,
            b.host_busy_cpus,
            if b.used {
                ""
            } else {
                "  (busy host: booted again)"
            },
            if b.failures.is_empty() {
                String::new()
            } else {
                format!(
                    "  failed: {}",
                    b.failures
                        .iter()
                        .map(|(n, why)| format!("{n} ({})", why.lines().next().unwrap_or("")))
                        .collect::<Vec<_>>()
                        .join("; ")
                )
            }
        );
    }
    s += "\n";
    if !rep.rows.is_empty() {
        s += &compare::render(&rep.rows, rep.threshold_pct, compare::Samples::Runs);
    }
    if !rep.second_set.is_empty() {
        s += &format!(
            "\nthe second set (rounds {}..{}), judged on its own boots: a change of the first set above counts only where this set finds it again\n",
            rep.rounds + 1,
            2 * rep.rounds
        );
        s += &compare::render(&rep.second_set, rep.threshold_pct, compare::Samples::Runs);
    }
    s += &compare::render_costs(&rep.cost);
    if rep.behaviour {
        s += "\n";
        s += &compare::behaviour::render(&rep.changes, rep.behaviour_judged);
    }
    s += &format!("verdict: {} (exit {})\n", rep.verdict, rep.exit);
    s
}
