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
