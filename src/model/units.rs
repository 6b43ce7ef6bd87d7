//! Sizes ("1G", "512K", "4096") and durations ("10ms", "2s", "5m") as written in scenario files,
//! and their human formatting.

use std::time::Duration;

/// A size that must not be 0 (a rate).
pub fn parse_nonzero_size(s: &str) -> Result<u64, String> {
    match parse_size(s)? {
        0 => Err("must be more than 0".into()),
        n => Ok(n),
    }
}

/// Parses a size in bytes. Suffixes K, M, G, T are powers of 1024 (an optional trailing "iB"/"B" is
/// accepted: "1GiB", "1GB" both mean 2^30, as dd does for "G").
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(t);
    let (num, mult) = match t.chars().last() {
        Some('K' | 'k') => (&t[..t.len() - 1], 1u64 << 10),
        Some('M' | 'm') => (&t[..t.len() - 1], 1 << 20),
        Some('G' | 'g') => (&t[..t.len() - 1], 1 << 30),
        Some('T' | 't') => (&t[..t.len() - 1], 1 << 40),
        _ => (t, 1),
    };
    let n: u64 = num
        .trim()
        .parse()
        .map_err(|_| format!("not a size: {s:?} (examples: 4096, 512K, 1M, 1G)"))?;
    n.checked_mul(mult)
        .ok_or_else(|| format!("size too large: {s:?}"))
}

/// The longest a duration may be (timeouts, sleeps, intervals...): one day. Longer ones are typos
/// ("5000m") or a timeout that would never catch a hung kernel.
pub const MAX_DURATION: Duration = Duration::from_secs(86400);

/// The shortest sampling interval, and the shortest timeout.
pub const MIN_INTERVAL: Duration = Duration::from_millis(1);

/// Parses a duration: a number followed by ms, s or m.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let err = || format!("not a duration: {s:?} (examples: 10ms, 2s, 1.5s, 5m)");
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else {
        return Err(err());
    };
    let v: f64 = num.trim().parse().map_err(|_| err())?;
    if !(v >= 0.0 && v.is_finite()) {
        return Err(err());
    }
    Duration::try_from_secs_f64(v * scale).map_err(|_| err())
}

/// Parses a duration that must lie within `min..=MAX_DURATION`.
pub fn parse_duration_within(s: &str, min: Duration) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d > MAX_DURATION {
        return Err(format!("{s:?} is longer than a day"));
    }
    if d < min {
        return Err(format!("{s:?} is shorter than {min:?}"));
    }
    Ok(d)
}

/// A command-line timeout or sampling interval: 1 ms to a day.
pub fn parse_cli_duration(s: &str) -> Result<Duration, String> {
    parse_duration_within(s, MIN_INTERVAL)
}

/// A duration on the command line where "0" means off (`--stall 0`).
pub fn parse_cli_duration_or_off(s: &str) -> Result<Duration, String> {
    if s.trim() == "0" {
        return Ok(Duration::ZERO);
    }
    parse_cli_duration(s)
}

/// Formats bytes for people: "1.0 GiB", "512.0 KiB", "-31.9 MiB".
pub fn human_bytes(b: i64) -> String {
    let a = b.unsigned_abs() as f64;
    let sign = if b < 0 { "-" } else { "" };
    for (unit, div) in [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
        if a >= div as f64 {
            return format!("{sign}{:.1} {unit}", a / div as f64);
        }
    }
    format!("{b} B")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("1M").unwrap(), 1 << 20);
        assert_eq!(parse_size("1G").unwrap(), 1 << 30);
        assert_eq!(parse_size("1GiB").unwrap(), 1 << 30);
        assert_eq!(parse_size("2k").unwrap(), 2048);
        assert!(parse_size("1X").is_err());
        assert!(parse_size("").is_err());
        assert!(parse_size("-1M").is_err());
        assert!(parse_size("99999999999T").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10ms").unwrap(), Duration::from_millis(10));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("5m").unwrap(), Duration::from_secs(300));
        assert!(parse_duration("10").is_err());
        assert!(parse_duration("-1s").is_err());
        // Too large for a Duration: an error, not a panic.
        assert!(parse_duration("1e300s").is_err());
    }

    #[test]
    fn bounded_durations() {
        assert_eq!(
            parse_cli_duration("1440m").unwrap(),
            Duration::from_secs(86400)
        );
        assert!(parse_cli_duration("1441m").is_err());
        assert!(parse_cli_duration("0s").is_err());
        assert!(parse_cli_duration("0.5ms").is_err());
        assert_eq!(
            parse_duration_within("0s", Duration::ZERO).unwrap(),
            Duration::ZERO
        );
    }

    #[test]
    fn human() {
        assert_eq!(human_bytes(1 << 30), "1.0 GiB");
        assert_eq!(human_bytes(-33427456), "-31.9 MiB");
        assert_eq!(human_bytes(12), "12 B");
    }
}
