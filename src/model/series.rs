//! The sampled time series: one row per sampler pass, one column per counter.

/// A time series: one row of values per sample, `t` in seconds since the scenario started.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Series {
    pub columns: Vec<String>,
    pub t: Vec<f64>,
    /// Row-major, `columns.len()` values per row.
    pub values: Vec<i64>,
}

impl Series {
    pub fn new(columns: Vec<String>) -> Self {
        Series {
            columns,
            ..Default::default()
        }
    }
    pub fn len(&self) -> usize {
        self.t.len()
    }
    pub fn is_empty(&self) -> bool {
        self.t.is_empty()
    }
    pub fn col(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
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
    /// "name=value" for every column of a row, for diagnostics.
    pub fn describe_row(&self, row: usize) -> String {
        let parts: Vec<String> = self
            .columns
            .iter()
            .enumerate()
            .map(|(c, n)| format!("{n}={}", self.get(row, c)))
            .collect();
        format!("t={:.3}s {}", self.t[row], parts.join(" "))
    }
    /// CSV: a header line, then one line per sample.
    pub fn to_csv(&self) -> String {
        let mut s = String::from("t");
        for c in &self.columns {
            s.push(',');
            s.push_str(c);
        }
        s.push('\n');
        for r in 0..self.len() {
            s.push_str(&format!("{:.4}", self.t[r]));
            for c in 0..self.columns.len() {
                s.push_str(&format!(",{}", self.get(r, c)));
            }
            s.push('\n');
        }
        s
    }
}
