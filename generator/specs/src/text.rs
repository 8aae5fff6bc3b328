//! Text for display: stored text (an evidence entry's error, a record's
//! message) is never shortened; a table or a message may show less of it.

/// Shortens text for a display at a word boundary (never mid-word), with `…`.
pub fn shorten(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_string();
    }
    let cut: String = text.chars().take(max_chars).collect();
    let at_word = cut
        .rfind(char::is_whitespace)
        .filter(|&i| i > max_chars / 2)
        .map_or(cut.as_str(), |i| &cut[..i]);
    format!("{}…", at_word.trim_end_matches([',', ';', ':', ' ']))
}

/// An error's cause in one stable sentence, for an ignore reason or a
/// planned status that generated code carries: its first clause (up to the
/// first sentence break, a `;`, a page log's `|`), its measured numbers
/// (decimals: an error, a bound) masked as `…`, at most 160 characters. A
/// re-measurement that fails the same way yields the same sentence; the
/// whole error stays in the evidence store and the run's records.
pub fn cause(error: &str) -> String {
    let first = error
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let end = ["; ", ". ", " | ", " (page log"]
        .iter()
        .filter_map(|sep| first.find(sep))
        .min()
        .unwrap_or(first.len());
    let clause = without_open_parenthesis(&first[..end]).trim_end_matches(['.', ':', ',', ' ']);
    shorten(&mask_decimals(clause), 160)
}

/// `text` up to the parenthesis a cut left open (`in its worst row (of 2`):
/// a clause that ends inside a parenthesis ends before it.
fn without_open_parenthesis(text: &str) -> &str {
    let mut open = Vec::new();
    for (i, c) in text.char_indices() {
        match c {
            '(' => open.push(i),
            ')' => {
                open.pop();
            }
            _ => {}
        }
    }
    open.first().map_or(text, |&i| &text[..i])
}

/// `text` with each decimal number (`0.1721`, `-5.6e-2`, `1e-5`) as `…`;
/// integers (a step, a count, an error code) stay.
fn mask_decimals(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let starts_number = chars[i].is_ascii_digit()
            && (i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_'));
        if !starts_number {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let mut j = i;
        while j < chars.len() && chars[j].is_ascii_digit() {
            j += 1;
        }
        let mut decimal = false;
        if j + 1 < chars.len() && chars[j] == '.' && chars[j + 1].is_ascii_digit() {
            decimal = true;
            j += 1;
            while j < chars.len() && chars[j].is_ascii_digit() {
                j += 1;
            }
        }
        if j < chars.len() && (chars[j] == 'e' || chars[j] == 'E') {
            let mut k = j + 1;
            if k < chars.len() && (chars[k] == '-' || chars[k] == '+') {
                k += 1;
            }
            if k < chars.len() && chars[k].is_ascii_digit() {
                decimal = true;
                j = k;
                while j < chars.len() && chars[j].is_ascii_digit() {
                    j += 1;
                }
            }
        }
        if decimal {
            if out.ends_with('-') {
                out.pop();
            }
            out.push('…');
        } else {
            out.extend(&chars[i..j]);
        }
        i = j;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_is_its_first_clause_without_measured_numbers() {
        assert_eq!(
            cause(
                "output pooler_output: relative L2 error 0.1721, above 0.1 (int8's bounds) (max abs error 5.637e-2; worst at flat index 26)"
            ),
            "output pooler_output: relative L2 error …, above … (int8's bounds)"
        );
        assert_eq!(
            cause(
                "ONNX Runtime run failed: Non-zero status code returned while running Reshape node. Name:'node_view'"
            ),
            "ONNX Runtime run failed: Non-zero status code returned while running Reshape node"
        );
        assert_eq!(
            cause(
                "opening the model: shape mismatch (page log: 2026-11-27 14:45:49.147350 [V:onnxruntime] x | y)"
            ),
            "opening the model: shape mismatch"
        );
        assert_eq!(
            cause("step 3 of 8 diverged: ERROR_CODE: 1, x2 ×12"),
            "step 3 of 8 diverged: ERROR_CODE: 1, x2 ×12"
        );
    }
}
