//! Documentation that must not drift from the code: the README's error-code table.

use snarkd::error::ErrorCode;

#[test]
fn readme_error_table_matches_the_codes() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    for code in ErrorCode::ALL {
        let row = format!("| {} | {} | {} |", code.code(), code.name(), code.meaning());
        assert!(readme.contains(&row), "README is missing or has a stale row: {row}");
        assert_eq!(ErrorCode::from_code(code.code()), Some(code));
    }
}
