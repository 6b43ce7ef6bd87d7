//! The references in docs/ are generated from the code's tables, so they cannot drift from it:
//! this test compares them, and with MEMCGTEST_WRITE_DOCS=1 writes them anew.

use std::path::Path;

fn same(file: &str, generated: String) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("docs")
        .join(file);
    if std::env::var_os("MEMCGTEST_WRITE_DOCS").is_some() {
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == generated,
        "docs/{file} differs from what the code generates; run MEMCGTEST_WRITE_DOCS=1 cargo test --test docs"
    );
}

#[test]
fn the_check_reference_is_the_check_table() {
    same("checks.md", memcgtest::check::reference());
}

#[test]
fn the_step_reference_is_the_step_table() {
    same("steps.md", memcgtest::scenario::steps_reference());
}

/// The strategy table in docs/explore.md, between its markers, is the explorer's.
#[test]
fn the_explorers_strategies_are_its_table() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/explore.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let (begin, end) = (
        "<!-- strategies: generated from src/explore/strategy.rs -->\n",
        "<!-- end of strategies -->",
    );
    let a = text.find(begin).expect("the begin marker") + begin.len();
    let b = text.find(end).expect("the end marker");
    let table = memcgtest::explore::strategies_table();
    if std::env::var_os("MEMCGTEST_WRITE_DOCS").is_some() {
        std::fs::write(&path, format!("{}{table}{}", &text[..a], &text[b..])).unwrap();
        return;
    }
    assert!(
        text[a..b] == table,
        "docs/explore.md's strategy table differs from the code's; run MEMCGTEST_WRITE_DOCS=1 cargo test --test docs"
    );
}
