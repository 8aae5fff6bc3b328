//! `gen list`: models, categories and platforms, with planned cell status counts;
//! or, for scripts, each model's test module path (`--test-paths`).

use std::io::Write;

use hwmatrix_specs::slice;

use super::Context;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only the models in slice K of N (`3/8`): each model falls in one slice by its
    /// model_type, and slice K of N is inside slice K mod M of M where M divides N
    /// (`gen measure --verify --slice` cuts the same way). tests/run.sh measures one
    /// slice's cells a run
    #[arg(long, value_name = "K/N", value_parser = slice::parse_slice)]
    pub slice: Option<(u32, u32)>,
    /// Print one line per model, its model_type and its test module's path in the
    /// generated crate (`category::module::`, tab-separated), instead of the table:
    /// what a script passes to `cargo test` as a filter or a --skip
    #[arg(long)]
    pub test_paths: bool,
}

pub fn run(cx: &Context, args: &Args, out: &mut dyn Write) -> Result<i32, String> {
    let specs = cx.specs()?;
    let mut plan = cx.plan(&specs)?;
    let slice = slice::Slice::new(
        specs.models.iter().map(|m| m.spec.model_type.as_str()),
        args.slice,
    );
    plan.models
        .retain(|m| slice.contains(&m.model.spec.model_type));
    if args.test_paths {
        for m in &plan.models {
            let _ = writeln!(out, "{}\t{}", m.model.spec.model_type, m.model.test_path());
        }
    } else {
        let _ = write!(out, "{}", hwmatrix_codegen::list::render(&plan));
    }
    Ok(0)
}
