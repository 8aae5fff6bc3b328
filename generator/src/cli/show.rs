//! `gen show`: one model's spec as gen resolves it, with where each field came from.

use std::io::Write;

use super::Context;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The model_type (transformers' own, e.g. xlm-roberta)
    model_type: String,
}

pub fn run(cx: &Context, args: &Args, out: &mut dyn Write) -> Result<i32, String> {
    let specs = cx.specs()?;
    let model_type = &args.model_type;
    let model = specs.model(model_type).ok_or_else(|| {
        format!("error: no spec has model_type `{model_type}`\n  help: `gen list` lists them")
    })?;
    let _ = writeln!(
        out,
        "# {}: resolved from {}",
        model_type, model.display_path
    );
    for (field, source) in &model.sources {
        let _ = writeln!(
            out,
            "#   {field}: {}",
            serde_json::to_value(source)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default()
        );
    }
    let _ = write!(
        out,
        "{}",
        serde_yaml::to_string(&model.spec).map_err(|e| e.to_string())?
    );
    Ok(0)
}
