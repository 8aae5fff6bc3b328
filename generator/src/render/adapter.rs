//! The model module and its adapters, emitted with quote: the static data a
//! cell hands to the runtime (model card, engine, tolerance per platform).

use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;
use runtime::Platform;

use crate::plan::{CellPlan, ModelPlan};
use crate::spec::{EngineName, TensorSpec};

/// `mod.rs` of a model: its card and its modules.
pub fn model_module(plan: &ModelPlan) -> TokenStream {
    let spec = &plan.model.spec;
    let doc = format!(
        " {} ({}, {}): {} cells. Spec: {}.",
        spec.model_type,
        spec.category,
        spec.architecture,
        plan.cells.len(),
        plan.model.display_path
    );
    let model_type = &spec.model_type;
    let category = &spec.category;
    let spec_path = &plan.model.display_path;
    let inputs = spec.inputs.iter().map(tensor_decl);
    let outputs = spec.outputs.iter().map(tensor_decl);
    let platform_mods = plan.cells.iter().map(|c| ident(c.platform.name()));
    quote! {
        #![doc = #doc]

        pub mod adapter;
        #( #[cfg(test)] mod #platform_mods; )*

        pub static MODEL: runtime::ModelCard = runtime::ModelCard {
            model_type: #model_type,
            category: #category,
            spec_path: #spec_path,
            inputs: &[ #(#inputs),* ],
            outputs: &[ #(#outputs),* ],
        };
    }
}

/// `adapter.rs` of a model: one cell per platform.
pub fn adapters(plan: &ModelPlan) -> TokenStream {
    let cells = plan.cells.iter().map(|cell| {
        let name = ident(&cell.platform.name().to_uppercase());
        let doc = format!(" {} on {}: {} ({}).", plan.model.spec.model_type, cell.platform, cell.status, engine_doc(cell));
        let platform = platform_path(cell.platform);
        let engine = engine_expr(cell);
        let (abs, rel) = (cell.tolerance.abs, cell.tolerance.rel);
        quote! {
            #[doc = #doc]
            pub static #name: runtime::Cell = runtime::Cell {
                model: &super::MODEL,
                platform: #platform,
                engine: #engine,
                tolerance: runtime::Tolerance { abs: #abs, rel: #rel },
            };
        }
    });
    quote! {
        //! The adapters of this model: how each platform runs it.
        #(#cells)*
    }
}

/// How a cell's engine reads in docs.
pub fn engine_doc(cell: &CellPlan) -> String {
    match cell.engine {
        EngineName::Onnxruntime => match provider(cell.platform) {
            Some(ep) => format!("onnxruntime, {}", ep.ort_name()),
            None => "onnxruntime".into(),
        },
        EngineName::Browser => format!("onnxruntime-web in headless Chromium, {}", cell.platform),
        other => format!("{other:?}"),
    }
}

fn engine_expr(cell: &CellPlan) -> TokenStream {
    match cell.engine {
        EngineName::Browser => {
            let backend = ident(if cell.platform == Platform::Webnn { "WebNn" } else { "WebGpu" });
            quote!(runtime::Engine::Browser(runtime::BrowserBackend::#backend))
        }
        _ => {
            let ep = provider(cell.platform).expect("the planner only gives onnxruntime to platforms with a provider");
            let ep = ident(&format!("{ep:?}"));
            quote!(runtime::Engine::OnnxRuntime(runtime::ExecutionProvider::#ep))
        }
    }
}

/// The ONNX Runtime execution provider that serves a platform natively
/// (the web platforms run onnxruntime-web in a browser instead).
pub fn provider(platform: Platform) -> Option<runtime::ExecutionProvider> {
    use runtime::ExecutionProvider as Ep;
    Some(match platform {
        Platform::Cpu => Ep::Cpu,
        Platform::Cuda => Ep::Cuda,
        Platform::Rocm => Ep::MiGraphX,
        Platform::Mps => Ep::CoreMl,
        Platform::Openvino => Ep::OpenVino,
        Platform::Qnn => Ep::Qnn,
        Platform::Webnn | Platform::Webgpu => return None,
    })
}

fn platform_path(platform: Platform) -> TokenStream {
    let variant = ident(&format!("{platform:?}"));
    quote!(runtime::Platform::#variant)
}

fn tensor_decl(t: &TensorSpec) -> TokenStream {
    let name = &t.name;
    let dtype = ident(&format!("{:?}", t.dtype));
    let axes = t.axes.iter();
    quote!(runtime::TensorDecl { name: #name, dtype: runtime::DType::#dtype, axes: &[ #(#axes),* ] })
}

fn ident(name: &str) -> Ident {
    Ident::new(name, Span::call_site())
}
