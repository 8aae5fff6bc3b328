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

/// `error` with what a run measures of itself masked as `…`: its decimals
/// (an error, a bound, a reference's last digits, which two CPUs compute
/// apart) and its durations (`242 µs`, `1830 ms`, and the share of time
/// after one: `(0%)`). Two errors that differ only there say the same: a
/// re-measurement keeps the store's wording and takes only its provenance.
pub fn without_measured_figures(error: &str) -> String {
    let masked = mask_decimals(error);
    let mut out = String::with_capacity(masked.len());
    let mut rest = masked.as_str();
    while let Some(at) = rest.find(|c: char| c.is_ascii_digit()) {
        let (before, from) = rest.split_at(at);
        out.push_str(before);
        let digits = from.chars().take_while(char::is_ascii_digit).count();
        let after = &from[digits..];
        let glued = before
            .chars()
            .last()
            .is_some_and(|c| c.is_alphanumeric() || c == '_');
        // A unit ends where a word does (`17 s3` is no duration).
        let unit = [" µs", " ms", " ns", " s"].into_iter().find(|unit| {
            !glued
                && after
                    .strip_prefix(unit)
                    .is_some_and(|r| !r.starts_with(|c: char| c.is_alphanumeric() || c == '_'))
        });
        match unit {
            Some(unit) => {
                out.push('…');
                out.push_str(unit);
                rest = &after[unit.len()..];
                // The share of a run's time that follows a duration: `(0%)`.
                if let Some(share) = rest.strip_prefix(" (").and_then(|r| {
                    let n = r.chars().take_while(char::is_ascii_digit).count();
                    (n > 0 && r[n..].starts_with("%)")).then(|| &r[n + 2..])
                }) {
                    out.push_str(" (…%)");
                    rest = share;
                }
            }
            None => {
                out.push_str(&from[..digits]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
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

    /// Two runs of one failing check differ in what they measured of
    /// themselves (timings, a reference's last digits), never in the rest.
    #[test]
    fn errors_compare_without_what_a_run_measures_of_itself() {
        let qnn = |cpu_us: u32, cpu_share: u32, htp_us: u32| {
            format!(
                "not every node ran on QNNExecutionProvider: Reshape ×8 on CPUExecutionProvider ran elsewhere (CPUExecutionProvider: 12 nodes (71%), {cpu_us} µs ({cpu_share}%); QNNExecutionProvider: 5 nodes (29%), {htp_us} µs (100%))"
            )
        };
        assert_eq!(
            without_measured_figures(&qnn(242, 0, 433622)),
            without_measured_figures(&qnn(218, 1, 367308))
        );
        assert!(without_measured_figures(&qnn(242, 0, 1)).contains("12 nodes (71%), … µs (…%)"));
        let reference = |expected: &str| {
            format!(
                "top-1 agreement 0.5000, below 0.75 (worst at flat index 3: got -1.74, expected {expected})"
            )
        };
        assert_eq!(
            without_measured_figures(&reference("-1.1980650424957275")),
            without_measured_figures(&reference("-1.1980667114257813"))
        );
        assert_ne!(
            without_measured_figures(&reference("-1.19")),
            without_measured_figures(&reference("-1.19").replace("index 3", "index 4")),
            "integers (an index, a count) still count"
        );
        assert_ne!(
            without_measured_figures(&qnn(1, 0, 1)),
            without_measured_figures(&qnn(1, 0, 1).replace("Reshape ×8", "Reshape ×9"))
        );
        assert_eq!(without_measured_figures("opset 17 s3"), "opset 17 s3");
    }

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
