//! `gen` with no verb: renders every file of the generated crate from all the
//! specs, and writes or checks the files the selection covers.

use std::io::Write;
use std::path::PathBuf;

use hwmatrix_codegen::{render, write};
use hwmatrix_specs::plan::{self, Plan, Selection};

use super::Context;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The generated crate to write into (its src/ is gen's)
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Write nothing; exit 1 listing drifted and missing files (and stale ones with --all or no selection)
    #[arg(long)]
    pub check: bool,
}

pub fn run(cx: &Context, args: &Args, out: &mut dyn Write) -> Result<i32, String> {
    let specs = cx.specs()?;
    let selected = cx.plan(&specs)?;
    // What every file is rendered from, whatever the selection.
    let full = plan::plan(&specs, &Selection::default()).map_err(|e| format!("error: {e}"))?;
    let everything = cx.selection().is_empty();
    let out_dir = args
        .out
        .clone()
        .unwrap_or_else(|| cx.root.join("generated"));
    if !out_dir.join("Cargo.toml").is_file() {
        return Err(format!(
            "error: {} is not the generated crate (it has no Cargo.toml)\n  help: pass --out with the folder of the `generated` crate",
            out_dir.display()
        ));
    }
    let mut files = render::render(&full)?;
    if !everything {
        let wanted = render::selected_paths(&selected);
        files.retain(|path, _| wanted.contains(path));
        debug_assert_eq!(
            files.len(),
            wanted.len(),
            "render renders every selected file"
        );
    }
    let changes = write::diff(&out_dir, &files, everything)?;
    let cells = cells(&selected);
    if args.check {
        if changes.is_clean() {
            let _ = writeln!(
                out,
                "{}: up to date ({} files, {cells} cells)",
                out_dir.display(),
                files.len()
            );
            return Ok(0);
        }
        for (label, paths) in [
            ("drifted", &changes.drifted),
            ("missing", &changes.missing),
            ("stale", &changes.stale),
        ] {
            for p in paths {
                let _ = writeln!(out, "{label}: {}", out_dir.join(p).display());
            }
        }
        let _ = writeln!(
            out,
            "{} is out of date with the specs: {} drifted, {} missing, {} stale; run `cargo run -p generator --bin gen -- --all`",
            out_dir.display(),
            changes.drifted.len(),
            changes.missing.len(),
            changes.stale.len()
        );
        return Ok(1);
    }
    if changes.is_clean() {
        let _ = writeln!(
            out,
            "nothing to do: {} files already up to date ({cells} cells)",
            files.len()
        );
        return Ok(0);
    }
    write::apply(&out_dir, &files, &changes)?;
    let _ = writeln!(
        out,
        "{}: {} written, {} removed, {} unchanged ({} models, {cells} cells)",
        out_dir.display(),
        changes.drifted.len() + changes.missing.len(),
        changes.stale.len(),
        changes.unchanged,
        selected.models.len()
    );
    Ok(0)
}

fn cells(plan: &Plan) -> usize {
    plan.models.iter().map(|m| m.model_cells().count()).sum()
}
