//! The documented exit-code table is the one the code uses.

use strata_frontend::exit::Exit;

#[test]
fn cli_doc_lists_the_exit_codes_of_the_code() {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/CLI.md")).unwrap();
    let rows: Vec<(u8, String)> = doc
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l
                .trim()
                .trim_matches('|')
                .split('|')
                .map(str::trim)
                .collect();
            (cells.len() == 2).then(|| {
                cells[0]
                    .parse::<u8>()
                    .ok()
                    .map(|c| (c, cells[1].to_string()))
            })?
        })
        .collect();
    let code: Vec<(u8, String)> = Exit::ALL
        .iter()
        .map(|e| (e.code(), e.meaning().to_string()))
        .collect();
    assert_eq!(
        rows, code,
        "docs/CLI.md's exit-code table differs from frontend/src/exit.rs"
    );
}

#[test]
fn cli_doc_lists_every_key_of_the_terminal_ui() {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/CLI.md")).unwrap();
    let mut in_doc: Vec<String> = doc
        .lines()
        .skip_while(|l| !l.starts_with("### Keys"))
        .skip(1)
        .take_while(|l| !l.starts_with('#'))
        .filter(|l| l.starts_with("| `"))
        .map(str::to_string)
        .collect();
    let in_code: Vec<String> = strata_tui::keys::KEYS
        .iter()
        .flat_map(|(_, keys)| keys.iter())
        .map(|k| format!("| `{}` | {} |", k.keys, k.what))
        .collect();
    in_doc.retain(|l| !l.starts_with("| `keys"));
    assert_eq!(
        in_doc,
        in_code,
        "docs/CLI.md's key table differs from frontend/src/tui/keys.rs; the rows from the code:\n{}",
        in_code.join("\n")
    );
}
