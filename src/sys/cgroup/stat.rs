//! memory.stat parsing, and where each version keeps a counter of the table (`model::counter`).
//!
//! Values are parsed strictly into signed 64-bit numbers: a negative value is kept (old kernels print
//! underflowed counters as negative numbers), a value above 2^63 printed as unsigned is the negative
//! number it encodes, and a malformed line is an error naming the file and line.

use std::path::Path;

use super::CgroupError;

pub use crate::model::Stat;

/// Parses one value: decimal, optionally negative; unsigned values above i64::MAX wrap to negative.
pub fn parse_value(s: &str) -> Option<i64> {
    if let Ok(v) = s.parse::<i64>() {
        return Some(v);
    }
    s.parse::<u64>().ok().map(|u| u as i64)
}

/// Parses "key value" lines. `path` only names the file in errors.
pub fn parse_stat(text: &str, path: &Path) -> Result<Stat, CgroupError> {
    let mut out = Vec::new();
    for (no, line) in text.lines().enumerate() {
        if line.is_empty() {
            continue;
        }
        let mut it = line.split_ascii_whitespace();
        let (Some(key), Some(val), None) = (it.next(), it.next(), it.next()) else {
            return Err(CgroupError::Parse {
                path: path.to_path_buf(),
                line: no + 1,
                what: format!("expected 'key value', got {line:?}"),
            });
        };
        let v = parse_value(val).ok_or_else(|| CgroupError::Parse {
            path: path.to_path_buf(),
            line: no + 1,
            what: format!("value of {key} is not an integer: {val:?}"),
        })?;
        out.push((key.to_string(), v));
    }
    Ok(Stat(out))
}

/// Looks up a few keys in stat text without allocating for the others (the sampler's hot path).
/// Returns Err(line number) on a malformed line holding a wanted key.
pub fn extract<K: AsRef<str>>(
    text: &str,
    keys: &[K],
    out: &mut [Option<i64>],
) -> Result<(), usize> {
    extract_with(text, keys, out, |v| parse_value(v.trim()))
}

/// Like `extract`, for v2 memory.numa_stat lines (`file_dirty N0=4096 N1=0`): each wanted key's
/// values summed over the nodes.
pub fn extract_node_sums<K: AsRef<str>>(
    text: &str,
    keys: &[K],
    out: &mut [Option<i64>],
) -> Result<(), usize> {
    extract_with(text, keys, out, |v| {
        v.split(' ')
            .filter(|p| !p.is_empty())
            .try_fold(0i64, |sum, p| {
                let (node, v) = p.strip_prefix('N')?.split_once('=')?;
                node.parse::<u32>().ok()?;
                Some(sum + parse_value(v)?)
            })
    })
}

/// One line of a memory.numa_stat (v2 `anon N0=4096 N1=0`, v1 `anon=3 N0=1 N1=2`): its value on
/// each node (index: node; a node the line skips reads 0); None when the line is missing or does
/// not parse.
pub fn node_values(text: &str, key: &str) -> Option<Vec<i64>> {
    let line = text.lines().find(|l| {
        let k = l.split(' ').next().unwrap_or("");
        k.split_once('=').map_or(k, |(k, _)| k) == key
    })?;
    let mut v = Vec::new();
    for p in line.split(' ').skip(1).filter(|p| !p.is_empty()) {
        let (node, x) = p.strip_prefix('N')?.split_once('=')?;
        let node: usize = node.parse().ok()?;
        if v.len() <= node {
            v.resize(node + 1, 0);
        }
        v[node] = parse_value(x)?;
    }
    Some(v)
}

/// The value of each wanted key's line, as `value` reads the rest of the line.
fn extract_with<K: AsRef<str>>(
    text: &str,
    keys: &[K],
    out: &mut [Option<i64>],
    value: impl Fn(&str) -> Option<i64>,
) -> Result<(), usize> {
    out.iter_mut().for_each(|o| *o = None);
    for (no, line) in text.lines().enumerate() {
        let Some((k, v)) = line.split_once(' ') else {
            continue;
        };
        // v1 memory.numa_stat: "file=12 N0=10 N1=2", the key with the group's total.
        let k = k.split_once('=').map_or(k, |(k, _)| k);
        if let Some(i) = keys.iter().position(|w| w.as_ref() == k) {
            out[i] = Some(value(v).ok_or(no + 1)?);
        }
    }
    Ok(())
}

pub use crate::model::counter::stat_key;

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    const V1: &str = include_str!("../../../tests/fixtures/memory.stat.v1");
    const V2: &str = include_str!("../../../tests/fixtures/memory.stat.v2");

    #[test]
    fn node_values_of_both_versions() {
        let v2 = "anon N0=4096 N1=8192\nfile N0=1\nshmem N0=0 N2=3\n";
        assert_eq!(node_values(v2, "anon"), Some(vec![4096, 8192]));
        assert_eq!(node_values(v2, "shmem"), Some(vec![0, 0, 3]));
        assert_eq!(node_values(v2, "file_dirty"), None);
        let v1 = "total=5 N0=2 N1=3\nanon=4 N0=1 N1=3\nhierarchical_anon=4 N0=1 N1=3\n";
        assert_eq!(node_values(v1, "anon"), Some(vec![1, 3]));
        assert_eq!(node_values("anon N0=x\n", "anon"), None);
    }

    #[test]
    fn v1_stat_with_negative_dirty() {
        let s = parse_stat(V1, Path::new("memory.stat")).unwrap();
        assert_eq!(s.get("dirty"), Some(-33427456));
        assert_eq!(s.get("total_dirty"), Some(-33427456));
        assert_eq!(s.get("cache"), Some(1042386944));
    }

    #[test]
    fn v2_stat_with_wrapped_unsigned_value() {
        let s = parse_stat(V2, Path::new("memory.stat")).unwrap();
        // 18446744073676124160 = 2^64 - 33427456: an underflow printed as unsigned.
        assert_eq!(s.get("file_writeback"), Some(-33427456));
        assert_eq!(s.get("file_dirty"), Some(4096));
    }

    #[test]
    fn malformed_line_names_file_and_line() {
        let e = parse_stat("cache 1\ndirty x\n", Path::new("/cg/memory.stat")).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("/cg/memory.stat") && msg.contains("line 2"),
            "{msg}"
        );
        assert!(parse_stat("a 1 2\n", &PathBuf::from("f")).is_err());
        assert!(parse_stat("lonely\n", &PathBuf::from("f")).is_err());
    }

    mod prop {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(3000))]

            /// Arbitrary memory.stat or /proc/vmstat text: no panic; an error names the file and
            /// a line that exists; `extract` agrees with the full parse on good text.
            #[test]
            fn arbitrary_stat_text(text in any::<String>(), key in "[a-z_]{1,12}") {
                let mut out = [None];
                let fast = extract(&text, &[key.as_str()], &mut out);
                match parse_stat(&text, Path::new("/cg/memory.stat")) {
                    Ok(s) => {
                        prop_assert!(fast.is_ok());
                        if s.0.iter().filter(|(k, _)| *k == key).count() == 1 {
                            prop_assert_eq!(out[0], s.get(&key));
                        }
                    }
                    Err(CgroupError::Parse { path, line, .. }) => {
                        prop_assert_eq!(path, PathBuf::from("/cg/memory.stat"));
                        prop_assert!(line >= 1 && line <= text.lines().count());
                    }
                    Err(e) => prop_assert!(false, "{}", e),
                }
            }

            /// Well-formed files round-trip exactly, whatever the values (negative, wrapped).
            #[test]
            fn well_formed_stat_round_trips(
                rows in proptest::collection::vec(("[a-z_]{1,16}", any::<i64>()), 0..40)
            ) {
                let text: String = rows.iter().map(|(k, v)| format!("{k} {v}\n")).collect();
                let s = parse_stat(&text, Path::new("f")).unwrap();
                prop_assert_eq!(s.0, rows);
            }
        }
    }

    #[test]
    fn extract_reads_only_wanted_keys() {
        let mut out = [None; 3];
        extract(V1, &["total_dirty", "writeback", "nope"], &mut out).unwrap();
        assert_eq!(out, [Some(-33427456), Some(0), None]);
        assert_eq!(extract("dirty zz\n", &["dirty"], &mut out[..1]), Err(1));
    }

    #[test]
    fn node_sums_add_every_node() {
        let text = "anon N0=4096 N1=8192\nfile_dirty N0=0 N1=12288\nfile N0=1\n";
        let mut out = [None; 3];
        extract_node_sums(text, &["file_dirty", "anon", "shmem"], &mut out).unwrap();
        assert_eq!(out, [Some(12288), Some(12288), None]);
        assert_eq!(
            extract_node_sums("anon N0=4096 X=1\n", &["anon"], &mut out[..1]),
            Err(1)
        );
        assert_eq!(
            extract_node_sums("anon N0=zz\n", &["anon"], &mut out[..1]),
            Err(1)
        );
    }
}
