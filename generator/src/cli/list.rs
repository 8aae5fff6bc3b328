//! `gen list`: models, categories and platforms, with planned cell status counts.

use std::io::Write;

use super::Context;

pub fn run(cx: &Context, out: &mut dyn Write) -> Result<i32, String> {
    let specs = cx.specs()?;
    let plan = cx.plan(&specs)?;
    let _ = write!(out, "{}", hwmatrix_codegen::list::render(&plan));
    Ok(0)
}
