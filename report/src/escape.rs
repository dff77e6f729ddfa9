//! Text made safe for HTML, and cut to fit.

/// `s` cut to `max` characters (not bytes: source lines and names may be UTF-8), with `…`
/// when anything was left out.
pub fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}

/// `s` safe as HTML text and attribute value.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_counts_characters_and_marks_the_cut() {
        assert_eq!(cut("MPI_Recv", 8), "MPI_Recv");
        assert_eq!(cut("MPI_Recv", 3), "MPI…");
        assert_eq!(cut("größe(n)", 5), "größe…");
        assert_eq!(
            escape("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }
}
