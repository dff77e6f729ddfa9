//! What an answer holds: literal steps with their sign, the JSON form.

use super::*;

#[test]
fn literal_steps_are_kept_with_their_sign() {
    let text = "\
void s(int n) {
    int a = 0, b = 0, c = 0, d = 0;
    for (int it = 0; it < n; it++) {
        a += 2;
        b -= 3;
        c = c - -1;
        d += n;
    }
}
";
    let found = c(text, "for (");
    let steps: Vec<(&str, Option<i64>)> = found
        .candidates
        .iter()
        .map(|c| (c.variable.as_str(), c.step))
        .collect();
    assert_eq!(
        steps,
        vec![
            ("it", Some(1)),
            ("a", Some(2)),
            ("b", Some(-3)),
            ("c", Some(1)),
            ("d", None)
        ]
    );
}

#[test]
fn the_json_names_every_field() {
    let text = "\
void j(int n) {
    for (int it = 0; it < n; it++) { x *= 2; }
}
";
    let json = serde_json::to_value(c(text, "for (")).expect("serializes");
    assert_eq!(
        json,
        serde_json::json!({
            "file": "snippet",
            "loop_line": 2,
            "kind": "for",
            "candidates": [{
                "variable": "it",
                "direction": "Increasing",
                "how": "for-loop induction (it++)",
                "step": 1,
                "line": 2
            }],
            "rejected": [{
                "variable": "x",
                "line": 2,
                "why": "x *= 2 is not monotonic by a constant step"
            }]
        })
    );
}
