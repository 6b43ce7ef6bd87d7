//! A parsed flat-keyed file (memory.stat, /proc/vmstat).

/// One parsed memory.stat (or /proc/vmstat): (key, value) in file order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stat(pub Vec<(String, i64)>);

impl Stat {
    pub fn get(&self, key: &str) -> Option<i64> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
    }
}
