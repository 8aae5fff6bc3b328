//! The report's text formats rendered from Tera templates (templates/report.*.tera):
//! the Rust side builds the context (every value already text), the template
//! holds the layout and the prose.

/// Renders `source` (compiled into gen) as template `name`: a name ending in
/// `.html` escapes every value unless the template marks it `safe`.
pub fn render(name: &str, source: &str, context: &serde_json::Value) -> Result<String, String> {
    let mut tera = tera::Tera::default();
    // Tera's own escaping also rewrites `'` and `/`; ours keeps text as written.
    tera.set_escape_fn(html_escape);
    tera.add_raw_template(name, source)
        .map_err(|e| format!("templates/{name}.tera: {}", chain(&e)))?;
    let context = tera::Context::from_value(context.clone())
        .map_err(|e| format!("templates/{name}.tera: its context: {}", chain(&e)))?;
    tera.render(name, &context)
        .map_err(|e| format!("templates/{name}.tera: {}", chain(&e)))
}

/// Tera's error with its causes: the top one alone rarely says which variable failed.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}

/// What the template escapes every value with: the four characters that
/// matter in HTML text and double-quoted attributes.
pub(super) fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A Markdown table cell's text: a `|` escaped, a line break a space.
pub(super) fn markdown_escape(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}
