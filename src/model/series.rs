//! The sampled time series: one row per sampler pass, one column per counter.

use std::collections::HashMap;
use std::fmt::Write as _;

use super::Column;

/// A time series: one row of values per sample, `t` in seconds since the scenario started.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Series {
    columns: Vec<Column>,
    /// Where each column is in a row.
    index: HashMap<Column, usize>,
    pub t: Vec<f64>,
    /// Row-major, `columns.len()` values per row.
    pub values: Vec<i64>,
}

impl Series {
    pub fn new(columns: Vec<Column>) -> Self {
        let index = columns
            .iter()
            .enumerate()
            .map(|(i, c)| (c.clone(), i))
            .collect();
        Series {
            columns,
            index,
            ..Default::default()
        }
    }
    /// A series of columns given by name (tests).
    #[cfg(test)]
    pub fn named(names: &[&str]) -> Self {
        Series::new(
            names
                .iter()
                .map(|n| Column::parse(n).unwrap_or_else(|| panic!("not a column: {n}")))
                .collect(),
        )
    }
    /// Puts `column` in place of column `i` (tests: a record with one column less or renamed).
    #[cfg(test)]
    pub fn rename(&mut self, i: usize, column: Column) {
        self.columns[i] = column;
        *self = Series {
            t: std::mem::take(&mut self.t),
            values: std::mem::take(&mut self.values),
            ..Series::new(std::mem::take(&mut self.columns))
        };
    }
    /// The columns, in row order.
    pub fn columns(&self) -> &[Column] {
        &self.columns
    }
    pub fn len(&self) -> usize {
        self.t.len()
    }
    pub fn is_empty(&self) -> bool {
        self.t.is_empty()
    }
    /// Where `column` is in a row, if it was sampled.
    pub fn col(&self, column: &Column) -> Option<usize> {
        self.index.get(column).copied()
    }
    pub fn get(&self, row: usize, col: usize) -> i64 {
        self.values[row * self.columns.len() + col]
    }
    pub fn push(&mut self, t: f64, row: &[i64]) {
        assert_eq!(row.len(), self.columns.len());
        self.t.push(t);
        self.values.extend_from_slice(row);
    }
    /// Rows whose time lies in [from, to].
    pub fn rows_between(&self, from: f64, to: f64) -> impl Iterator<Item = usize> + '_ {
        (0..self.len()).filter(move |&i| self.t[i] >= from && self.t[i] <= to)
    }
    /// The test groups sampled, in column order.
    pub fn groups(&self) -> Vec<&str> {
        let mut g: Vec<&str> = Vec::new();
        for c in &self.columns {
            if let Some(name) = c.test_group()
                && !g.contains(&name)
            {
                g.push(name);
            }
        }
        g
    }
    /// Where a row is, for a failure message: its time and its line in the report's CSV of the
    /// scenario (`<scenario>.csv`: a header line, then a line per sample), which holds every
    /// column of it. The message itself names only the values its check judged: a row has
    /// hundreds of columns (every counter of every group, /proc/vmstat before and after).
    pub fn describe_row(&self, row: usize) -> String {
        format!("t={:.3}s {}", self.t[row], self.csv_line(row))
    }
    /// Where the whole of a row is: its line in `<scenario>.csv` (a header line, then a line per
    /// sample).
    pub fn csv_line(&self, row: usize) -> String {
        format!(
            "(every column of that sample: line {} of the scenario's CSV in the report)",
            row + 2
        )
    }
    /// "name=value" for some columns of a row, for diagnostics of checks that judge those.
    pub fn describe_cols(&self, row: usize, cols: &[usize]) -> String {
        let parts: Vec<String> = cols
            .iter()
            .map(|&c| format!("{}={}", self.columns[c], self.get(row, c)))
            .collect();
        format!("t={:.3}s {}", self.t[row], parts.join(" "))
    }
    /// The groups whose OOM-kill count rose over the series, with what they held at its last
    /// sample: why a task of the run may have died of SIGKILL (e.g. a v1 group whose memory was
    /// all under writeback to a slow disk: reclaim cannot free it, and a charge fails).
    pub fn oom_kills(&self) -> Option<String> {
        use super::counter::{DIRTY, OOM_KILLS, USAGE, WRITEBACK};
        use super::units::human_bytes;
        let last = self.len().checked_sub(1)?;
        let value = |g: &str, c: &str| Some(self.get(last, self.col(&Column::group(g, c))?));
        let parts: Vec<String> = (self.groups().into_iter())
            .filter_map(|g| {
                let col = self.col(&Column::group(g, OOM_KILLS))?;
                let (a, b) = (self.get(0, col), self.get(last, col));
                let held: Vec<String> = [USAGE, DIRTY, WRITEBACK]
                    .iter()
                    .filter_map(|c| Some(format!("{c} {}", human_bytes(value(g, c)?))))
                    .collect();
                (b > a).then(|| format!("{g} (oom_kills {a} -> {b}; {})", held.join(", ")))
            })
            .collect();
        (!parts.is_empty()).then(|| {
            format!(
                "the OOM killer acted in {} (at t={:.3}s)",
                parts.join(", "),
                self.t[last]
            )
        })
    }
    /// The groups whose usage rose above their memory.high (`highs`: group, bytes) during the
    /// series, with their high events: why a run that timed out may have crawled on a sound
    /// kernel. A task charging above memory.high sleeps up to 2 s on its way back to user space
    /// for every 64 pages it charged (mem_cgroup_handle_over_high), so a workload tens of MiB
    /// above it may take minutes (Debian 6.1: 111 s from a 31 MiB high to a 113 MiB limit).
    pub fn over_high(&self, highs: &[(&str, u64)]) -> Option<String> {
        use super::counter::{HIGH_EVENTS, USAGE};
        use super::units::human_bytes;
        let last = self.len().checked_sub(1)?;
        let parts: Vec<String> = (highs.iter())
            .filter_map(|&(g, high)| {
                let usage = self.col(&Column::group(g, USAGE))?;
                let most = (0..self.len()).map(|r| self.get(r, usage)).max()?;
                let events = (self.col(&Column::group(g, HIGH_EVENTS)))
                    .map(|c| format!(", high events {} -> {}", self.get(0, c), self.get(last, c)))
                    .unwrap_or_default();
                (most > high as i64).then(|| {
                    format!(
                        "{g} reached {} against its memory.high of {}{events}",
                        human_bytes(most),
                        human_bytes(high as i64)
                    )
                })
            })
            .collect();
        (!parts.is_empty()).then(|| {
            format!(
                "{}: the kernel throttles a task charging above memory.high (up to 2 s for every 64 pages), by design",
                parts.join("; ")
            )
        })
    }
    /// A series read back from [`Series::to_csv`]'s text; the error names the line.
    pub fn from_csv(text: &str) -> Result<Series, String> {
        let mut lines = text.lines();
        let header = lines.next().ok_or("no header line")?;
        let mut names = header.split(',');
        if names.next() != Some("t[s]") {
            return Err("line 1: the first column is not t[s]".into());
        }
        let columns = names
            .map(|h| Column::from_csv_header(h).ok_or(format!("line 1: no column {h:?}")))
            .collect::<Result<Vec<_>, _>>()?;
        let mut s = Series::new(columns);
        let mut row = Vec::with_capacity(s.columns.len());
        for (i, line) in lines.enumerate() {
            let bad = || format!("line {}: not a sample of {} values", i + 2, s.columns.len());
            let mut fields = line.split(',');
            let t: f64 = fields.next().and_then(|f| f.parse().ok()).ok_or_else(bad)?;
            row.clear();
            for f in fields {
                row.push(f.parse::<i64>().map_err(|_| bad())?);
            }
            if row.len() != s.columns.len() {
                return Err(bad());
            }
            s.push(t, &row);
        }
        Ok(s)
    }

    /// CSV: a header line (each column's name and unit), then one line per sample.
    pub fn to_csv(&self) -> String {
        let mut s = String::from("t[s]");
        for c in &self.columns {
            s.push(',');
            s.push_str(&c.csv_header());
        }
        s.push('\n');
        // Written in place (no string per value): the guest of a VM run writes these under TCG.
        let n = self.columns.len();
        for r in 0..self.len() {
            let _ = write!(s, "{:.4}", self.t[r]);
            for v in &self.values[r * n..(r + 1) * n] {
                let _ = write!(s, ",{v}");
            }
            s.push('\n');
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_points_at_its_sample_in_the_csv_not_at_every_column() {
        let mut s = Series::new(vec![
            Column::group("a", "dirty"),
            Column::group("a", "file"),
        ]);
        s.push(0.5, &[1, 2]);
        s.push(1.25, &[3, 4]);
        let d = s.describe_row(1);
        assert!(d.starts_with("t=1.250s "), "{d}");
        let line: usize = d
            .split("line ")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let csv = s.to_csv();
        assert!(
            csv.lines().nth(line - 1).unwrap().starts_with("1.2500,3,4"),
            "{csv}"
        );
        assert!(!d.contains("a.dirty"), "{d}");
    }

    #[test]
    fn a_series_reads_back_from_its_csv() {
        let mut s = Series::new(vec![
            Column::group("p/a", "dirty"),
            Column::local("p", "file"),
            Column::vmstat("nr_dirty"),
            Column::files("p/a", "dirty", true),
            Column::pass(),
        ]);
        s.push(0.0, &[0, 4096, 3, 0, 120]);
        s.push(1.25, &[-8192, 1 << 40, 0, 7, 99]);
        let back = Series::from_csv(&s.to_csv()).unwrap();
        assert_eq!(back, s);
        let err = Series::from_csv("t[s],p.dirty[B]\n0.1,1,2\n").unwrap_err();
        assert!(err.starts_with("line 2:"), "{err}");
        assert!(Series::from_csv("x,p.dirty[B]\n").is_err());
    }

    #[test]
    fn oom_kills_name_the_group_and_what_it_held() {
        let mut s = Series::named(&[
            "g.oom_kills",
            "g.usage",
            "g.dirty",
            "g.writeback",
            "h.oom_kills",
        ]);
        s.push(0.0, &[0, 0, 0, 0, 2]);
        assert_eq!(s.oom_kills(), None);
        s.push(1.5, &[1, 55 << 20, 0, 51 << 20, 2]);
        assert_eq!(
            s.oom_kills().as_deref(),
            Some(
                "the OOM killer acted in g (oom_kills 0 -> 1; usage 55.0 MiB, dirty 0 B, writeback 51.0 MiB) (at t=1.500s)"
            )
        );
    }

    #[test]
    fn over_high_names_the_group_its_peak_and_events() {
        let mut s = Series::named(&["g.usage", "g.high_events", "h.usage"]);
        s.push(0.0, &[1 << 20, 0, 1 << 20]);
        s.push(1.0, &[90 << 20, 1003, 1 << 20]);
        s.push(2.0, &[0, 1003, 1 << 20]);
        assert_eq!(s.over_high(&[("h", 31 << 20)]), None);
        assert_eq!(
            s.over_high(&[("g", 31 << 20), ("h", 31 << 20)]).as_deref(),
            Some(
                "g reached 90.0 MiB against its memory.high of 31.0 MiB, high events 0 -> 1003: the kernel throttles a task charging above memory.high (up to 2 s for every 64 pages), by design"
            )
        );
    }
}
