//! The bundled example result stays what the code produces. Regenerate it after an
//! intended format change with `STRATA_BLESS=1 cargo test -p strata-result --test example`.

use std::path::PathBuf;
use strata_result::StrataResult;
use strata_result::example::ring_result;

fn example_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/examples/ring-8.json")
}

#[test]
fn committed_example_matches_the_generator() {
    let json = ring_result().to_json();
    let path = example_path();
    if std::env::var_os("STRATA_BLESS").is_some() {
        std::fs::write(&path, &json).unwrap();
    }
    let committed = std::fs::read_to_string(&path).expect("docs/examples/ring-8.json exists");
    assert_eq!(
        committed, json,
        "docs/examples/ring-8.json is stale: rerun with STRATA_BLESS=1"
    );
    // And it reads back to the same result.
    let back = StrataResult::from_json(&committed, "ring-8.json").unwrap();
    assert_eq!(back.to_json(), json);
}
