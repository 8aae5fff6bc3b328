//! The static data of the generated crate, emitted with quote: each model's
//! declaration (`mod.rs`), its cells (`cells.rs`), and the platforms of
//! hardware.yaml (`platforms.rs`).

use hwmatrix_cell::{Planned, Platform, decl};
use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;
use std::collections::BTreeMap;

use super::test_module::Gate;

use hwmatrix_specs::plan::{CellPlan, ModelPlan, PlatformPlan};
use hwmatrix_specs::spec::{
    EngineSpec, PlatformSpec, PrecisionTolerance, QuantizationFile, TensorSpec, ToleranceSpec,
};

/// `mod.rs` of a model: its declaration and its modules.
pub fn model_module(plan: &ModelPlan) -> TokenStream {
    let spec = &plan.model.spec;
    let doc = format!(
        " {} ({}, {}): {} cells. Spec: {}.",
        spec.model_type,
        spec.category,
        spec.architecture,
        plan.model_cells().count(),
        plan.model.display_path
    );
    let model_type = &spec.model_type;
    let category = &spec.category;
    let spec_path = &plan.model.display_path;
    let digest = plan.model.digest();
    // Fixed inputs are data of the export, not inputs of the graph a cell runs.
    let inputs = spec
        .inputs
        .iter()
        .filter(|t| !spec.export.fixed_inputs.contains(&t.name))
        .map(tensor_decl);
    let outputs = spec.outputs.iter().map(tensor_decl);
    let tolerance = tolerance(&spec.tolerance);
    let mut platforms: Vec<Platform> = plan.cells.iter().map(|c| c.platform).collect();
    platforms.dedup();
    let platform_mods = platforms.iter().map(|p| ident(p.name()));
    // A platform's tests are compiled only in a build that selects it (its feature is its
    // name): a cpu build compiles 4,545 tests instead of 29,856, which is what keeps the
    // rebuild after one spec changes fast. Its cells stay in `cells.rs` for every build, so the
    // ledger still records each one that does not run, with how to enable it.
    let platform_features = platforms.iter().map(|p| p.name());
    // A model checked as its components: each is declared like a model, with its own tensors.
    let components = spec.components.iter().map(|c| {
        let name = &c.name;
        let inputs = c.inputs.iter().map(tensor_decl);
        let outputs = c.outputs.iter().map(tensor_decl);
        quote! {
            runtime::ModelDecl {
                model_type: #model_type,
                category: #category,
                spec_path: #spec_path,
                spec_digest: #digest,
                inputs: &[ #(#inputs),* ],
                outputs: &[ #(#outputs),* ],
                tolerance: #tolerance,
                component: Some(#name),
                components: &[],
            }
        }
    });
    // A generating model's generation fixture: its own digest (the spec and the declared cache,
    // as the generation exporter receives them) and the cache's past inputs.
    let generation = plan.cells.iter().any(|c| c.generation.is_some()).then(|| {
        let digest = plan.model.generation_digest();
        let cache = hwmatrix_specs::spec::CacheGroup::past_inputs(&spec.cache)
            .into_iter()
            .map(|(name, t)| decl_tokens(&name, t.dtype, &t.axes));
        quote! {
            /// Its generation fixture: the spec's digest as the generation exporter receives it, and the cache it declares (`cache:`).
            pub static GENERATION: runtime::GenerationDecl = runtime::GenerationDecl {
                spec_digest: #digest,
                cache: &[ #(#cache),* ],
            };
        }
    });
    quote! {
        #![doc = #doc]

        pub mod cells;
        #( #[cfg(all(test, feature = #platform_features))] mod #platform_mods; )*

        pub static MODEL: runtime::ModelDecl = runtime::ModelDecl {
            model_type: #model_type,
            category: #category,
            spec_path: #spec_path,
            spec_digest: #digest,
            inputs: &[ #(#inputs),* ],
            outputs: &[ #(#outputs),* ],
            tolerance: #tolerance,
            component: None,
            components: &[ #(#components),* ],
        };

        #generation
    }
}

/// The name of a cell's static in `cells.rs`, and of its engine's in
/// `platforms.rs`: `CPU_ONNX`, `CPU_TORCH`.
pub fn cell_const(cell: &CellPlan) -> String {
    engine_const(cell.platform, &cell.engine)
}

fn engine_const(platform: Platform, engine: &EngineSpec) -> String {
    format!("{}_{}", platform.name(), engine.kind().module(platform)).to_uppercase()
}

/// `cells.rs` of a model: one cell per platform and engine.
pub fn cells(plan: &ModelPlan) -> TokenStream {
    let cells = plan.cells.iter().map(|cell| {
        if cell.is_kernel() {
            return kernel_cell(plan, cell);
        }
        let name = ident(&cell_const(cell));
        let platform = ident(&cell.platform.name().to_uppercase());
        let doc = format!(" {} on {}: {} ({}).", plan.model.spec.model_type, cell.platform, cell.planned, engine_doc(&cell.engine));
        let planned = planned(&cell.planned);
        let mut cell_expr = quote!(Cell::new(&super::MODEL, &crate::platforms::#platform, &crate::platforms::#name, #planned));
        if !cell.check_plans.is_empty() {
            let plans = cell.check_plans.iter().map(|(check, planned)| {
                let (check, planned) = (check.name(), self::planned(planned));
                quote!(CheckPlan { check: #check, planned: #planned })
            });
            cell_expr = quote!(#cell_expr.with_check_plans(&[ #(#plans),* ]));
        }
        if let Some(t) = &cell.tolerance_override {
            let t = tolerance(t);
            cell_expr = quote!(#cell_expr.with_tolerance(#t));
        }
        if !cell.precision_checks.is_empty() {
            let checks = cell.precision_checks.iter().map(|p| {
                let precision = ident(&format!("{:?}", p.precision));
                let p_planned = self::planned(&p.planned);
                let PrecisionTolerance { min_cosine, max_rel_l2, min_top1, .. } = &p.tolerance;
                let (min_cosine, max_rel_l2, min_top1) = (float(*min_cosine), float(*max_rel_l2), float(*min_top1));
                let bound = quote!(AgreementBound::new(#min_cosine, #max_rel_l2, #min_top1));
                match p.planned {
                    Planned::Run => quote!(PrecisionCheck::run(Precision::#precision, #bound)),
                    _ => quote!(PrecisionCheck::new(Precision::#precision, #p_planned, #bound)),
                }
            });
            cell_expr = quote!(#cell_expr.with_precision_checks(&[ #(#checks),* ]));
            let class_plans: Vec<TokenStream> = cell.precision_checks.iter().flat_map(|p| {
                let precision = ident(&format!("{:?}", p.precision));
                p.by_class.iter().map(move |(class, planned)| {
                    let planned = self::planned(planned);
                    quote!(ClassPlan { precision: Precision::#precision, class: #class, planned: #planned })
                })
            }).collect();
            if !class_plans.is_empty() {
                cell_expr = quote!(#cell_expr.with_class_plans(&[ #(#class_plans),* ]));
            }
        }
        if let Some(generation) = &cell.generation {
            let g_planned = self::planned(generation);
            cell_expr = quote!(#cell_expr.with_generation(&super::GENERATION, #g_planned));
        }
        if let Some((precision, bound, reason, agreement)) = &cell.float32_computed_in {
            let precision = ident(&format!("{precision:?}"));
            let PrecisionTolerance { min_cosine, max_rel_l2, min_top1, .. } = agreement;
            let (min_cosine, max_rel_l2, min_top1) = (float(*min_cosine), float(*max_rel_l2), float(*min_top1));
            let agreement = quote!(AgreementBound::new(#min_cosine, #max_rel_l2, #min_top1));
            cell_expr = quote!(#cell_expr.computing_float32_in(Precision::#precision, #bound, #reason, #agreement));
        }
        if !cell.fallback_ops.is_empty() {
            let fallback = cell.fallback_ops.iter().map(|(op, reason)| quote!(AllowedFallback { op: #op, reason: #reason }));
            cell_expr = quote!(#cell_expr.allowing_fallback(&[ #(#fallback),* ]));
        }
        if let Some(reason) = &cell.in_own_process {
            cell_expr = quote!(#cell_expr.in_own_process(#reason));
        }
        quote! {
            #[doc = #doc]
            pub static #name: Cell = #cell_expr;
        }
    });
    quote! {
        //! The cells of this model: how each platform and engine runs it, and what is planned for it.
        use runtime::cells_prelude::*;
        #(#cells)*
    }
}

/// A kernel cell's static: its checks are quantization.yaml's schemes on wgpu.
fn kernel_cell(plan: &ModelPlan, cell: &CellPlan) -> TokenStream {
    let name = ident(&cell_const(cell));
    let platform = ident(&cell.platform.name().to_uppercase());
    let doc = format!(
        " {} on {}: quantization checks on wgpu's kernels, one per scheme of model-specs/quantization.yaml.",
        plan.model.spec.model_type, cell.platform
    );
    let checks = cell.quantization.iter().map(|c| {
        let scheme = ident(&format!("{:?}", c.scheme));
        let planned = planned(&c.planned);
        let expected = match c.expected {
            Some(r) => {
                let r = ident(&format!("{r:?}"));
                quote!(Some(Rating::#r))
            }
            None => quote!(None),
        };
        quote!(QuantizationCheck { scheme: QuantScheme::#scheme, planned: #planned, expected: #expected })
    });
    let cell_planned = planned(&cell.planned);
    quote! {
        #[doc = #doc]
        pub static #name: Cell = Cell::new(
            &super::MODEL,
            &crate::platforms::#platform,
            &crate::platforms::#name,
            #cell_planned,
        )
        .with_quantization(&crate::platforms::QUANTIZATION, &[ #(#checks),* ]);
    }
}

/// `QUANTIZATION` in `platforms.rs`: model-specs/quantization.yaml, where its
/// platform is planned, and the engine of its kernel cells (wgpu).
fn quantization_settings(
    platforms: &[PlatformPlan],
    file: &QuantizationFile,
) -> Option<TokenStream> {
    platforms.iter().any(|p| p.platform == file.platform).then(|| {
        let group_size = file.group_size;
        let m = file.mixed;
        let (attention, embedding, output, feed_forward) = (m.attention, m.embedding, m.output, m.feed_forward);
        let ratings = file.ratings.iter().map(|r| {
            let rating = ident(&format!("{:?}", r.rating));
            // proc_macro2 has no literal for infinity.
            let bound = if r.max_mean_relative_error.is_finite() { let b = r.max_mean_relative_error; quote!(#b) } else { quote!(f64::INFINITY) };
            quote!((runtime::Rating::#rating, #bound))
        });
        let doc = format!(" model-specs/quantization.yaml: how {}'s quantization checks quantize, and each rating's bound on the mean relative error.", file.platform);
        let engine = ident(&engine_const(file.platform, &EngineSpec::Wgpu {}));
        let engine_doc = format!(" The engine of {}'s kernel cells: wgpu, running the quantization checks' WGSL kernels on the models' own weights.", file.platform);
        quote! {
            #[doc = #engine_doc]
            pub static #engine: runtime::Engine = runtime::Engine::Wgpu;
            #[doc = #doc]
            pub static QUANTIZATION: runtime::QuantizationDecl = runtime::QuantizationDecl {
                group_size: #group_size,
                mixed: runtime::MixedWidths { attention: #attention, embedding: #embedding, output: #output, feed_forward: #feed_forward },
                ratings: &[ #(#ratings),* ],
            };
        }
    })
}

/// `platforms.rs`: each planned platform and its engines as hardware.yaml
/// describes them, and which cargo features are on in this build.
pub fn platforms<'a>(
    platforms: &[PlatformPlan],
    hardware: &dyn Fn(Platform) -> &'a PlatformSpec,
    quantization: &QuantizationFile,
) -> TokenStream {
    let quantization_platform = quantization.platform;
    let quantization = quantization_settings(platforms, quantization);
    let decls = platforms.iter().map(|p| {
        let spec = hardware(p.platform);
        let name = ident(&p.platform.name().to_uppercase());
        let engines: Vec<String> = p.engines.iter().map(engine_doc).collect();
        let doc = format!(" {}: engines {}.", spec.display_name, engines.join("; "));
        let platform = platform_path(p.platform);
        let feature = &spec.feature;
        let requires = &spec.requires;
        let own_process = match &spec.checks_in_own_process {
            Some(reason) => quote!(Some(#reason)),
            None => quote!(None),
        };
        let engines = p.engines.iter().map(|e| {
            let engine_name = ident(&engine_const(p.platform, e));
            let doc = format!(
                " {}'s {} engine: {}.",
                spec.display_name,
                e.kind().name(),
                engine_doc(e)
            );
            let engine = engine_expr(e);
            quote! {
                #[doc = #doc]
                pub static #engine_name: runtime::Engine = #engine;
            }
        });
        quote! {
            #[doc = #doc]
            pub static #name: runtime::PlatformDecl = runtime::PlatformDecl {
                platform: #platform,
                feature: #feature,
                requires: #requires,
                checks_in_own_process: #own_process,
            };
            #(#engines)*
        }
    });
    let mut features: Vec<&str> = platforms
        .iter()
        .map(|p| hardware(p.platform).feature.as_str())
        .collect();
    features.extend(
        platforms
            .iter()
            .flat_map(|p| p.engines.iter().filter_map(|e| e.kind().cargo_feature())),
    );
    features.sort();
    features.dedup();
    let features = features.iter().map(|f| quote!(#f => cfg!(feature = #f),));
    let gates = gates(platforms, hardware, quantization_platform);
    quote! {
        //! The platforms of hardware.yaml: cargo feature, what each needs, and the engines that serve its cells.
        #(#decls)*
        #quantization
        #gates

        /// Whether a cargo feature (a platform's or an engine's) is on in this build.
        pub fn feature_on(feature: &str) -> bool {
            match feature {
                #(#features)*
                _ => false,
            }
        }
    }
}

/// The gates of platforms.rs: a macro per platform and engine (and one for the
/// quantization checks) that gives each test it wraps the `#[ignore]` of a
/// build without the cargo features it needs, its message written once here.
fn gates<'a>(
    platforms: &[PlatformPlan],
    hardware: &dyn Fn(Platform) -> &'a PlatformSpec,
    quantization_platform: Platform,
) -> TokenStream {
    let mut gates = BTreeMap::new();
    for p in platforms {
        for e in &p.engines {
            let gate = Gate::of_engine(hardware(p.platform), e.kind());
            gates.entry(gate.name.clone()).or_insert(gate);
        }
        if p.platform == quantization_platform {
            let gate = Gate::of_quantization(hardware(p.platform));
            gates.entry(gate.name.clone()).or_insert(gate);
        }
    }
    let macros = gates.values().map(|gate| {
        let name = ident(&gate.name);
        let features = &gate.features;
        let off = &gate.off;
        let doc = format!(
            " The tests it wraps are ignored unless the cargo feature{} {} {} on.",
            if features.len() > 1 { "s" } else { "" },
            features.join(" and "),
            if features.len() > 1 { "are" } else { "is" }
        );
        quote! {
            #[doc = #doc]
            #[allow(unused_macros)]
            macro_rules! #name {
                ($($test:item)*) => {
                    $( #[cfg_attr(not(all(#(feature = #features),*)), ignore = #off)] $test )*
                };
            }
        }
    });
    quote!(#(#macros)*)
}

/// How an engine reads in docs.
pub fn engine_doc(engine: &EngineSpec) -> String {
    match engine {
        EngineSpec::Onnxruntime {
            provider, options, ..
        } => decl::describe_onnxruntime(
            *provider,
            options.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        ),
        EngineSpec::Libtorch { device } => decl::describe_libtorch(device),
        EngineSpec::Wgpu {} => "wgpu".into(),
        EngineSpec::Browser {
            backend,
            device_type,
            app,
        } => decl::describe_browser(*backend, device_type.as_deref(), *app),
        EngineSpec::Openvino {
            device, frontend, ..
        } => decl::describe_openvino(device, *frontend),
    }
}

fn engine_expr(engine: &EngineSpec) -> TokenStream {
    match engine {
        EngineSpec::Onnxruntime {
            provider, options, ..
        } => {
            let provider = ident(&format!("{provider:?}"));
            let options = options.iter().map(|(k, v)| quote!((#k, #v)));
            quote!(runtime::Engine::OnnxRuntime { provider: runtime::ExecutionProvider::#provider, options: &[ #(#options),* ] })
        }
        EngineSpec::Libtorch { device } => quote!(runtime::Engine::Libtorch { device: #device }),
        EngineSpec::Wgpu {} => quote!(runtime::Engine::Wgpu),
        EngineSpec::Browser {
            backend,
            device_type,
            app,
        } => {
            let backend = ident(&format!("{backend:?}"));
            let app = ident(&format!("{app:?}"));
            let device_type = match device_type {
                Some(d) => quote!(Some(#d)),
                None => quote!(None),
            };
            quote!(runtime::Engine::Browser { backend: runtime::BrowserBackend::#backend, device_type: #device_type, app: runtime::BrowserApp::#app })
        }
        EngineSpec::Openvino {
            device, frontend, ..
        } => {
            let frontend = ident(&format!("{frontend:?}"));
            quote!(runtime::Engine::OpenVino { device: #device, frontend: runtime::OpenVinoFrontend::#frontend })
        }
    }
}

fn planned(planned: &Planned<String>) -> TokenStream {
    let basis = |b: &hwmatrix_cell::Basis| {
        let b = ident(&format!("{b:?}"));
        quote!(Basis::#b)
    };
    match planned {
        Planned::Run => quote!(Planned::Run),
        Planned::Unsupported { reason, basis: b } => {
            let b = basis(b);
            quote!(Planned::Unsupported { reason: #reason, basis: #b })
        }
        Planned::KnownIssue {
            reason,
            basis: b,
            stage,
        } => {
            let b = basis(b);
            let stage = match stage {
                Some(stage) => {
                    let stage = ident(&format!("{stage:?}"));
                    quote!(Some(Stage::#stage))
                }
                None => quote!(None),
            };
            quote!(Planned::KnownIssue { reason: #reason, basis: #b, stage: #stage })
        }
        Planned::NoEngine { reason } => quote!(Planned::NoEngine { reason: #reason }),
        Planned::NotTested { reason, stage } => {
            let stage = ident(&format!("{stage:?}"));
            quote!(Planned::NotTested { reason: #reason, stage: Stage::#stage })
        }
    }
}

/// A bound as a literal without its type's suffix (`0.98`, not `0.98f64`): the
/// declarations' types say it.
fn float(value: f64) -> proc_macro2::Literal {
    proc_macro2::Literal::f64_unsuffixed(value)
}

fn tolerance(t: &ToleranceSpec) -> TokenStream {
    let (abs, rel) = (t.abs, t.rel);
    quote!(runtime::Tolerance { abs: #abs, rel: #rel })
}

fn platform_path(platform: Platform) -> TokenStream {
    let variant = ident(&format!("{platform:?}"));
    quote!(runtime::Platform::#variant)
}

fn tensor_decl(t: &TensorSpec) -> TokenStream {
    decl_tokens(&t.name, t.dtype, &t.axes)
}

fn decl_tokens(name: &str, dtype: hwmatrix_cell::DType, axes: &[String]) -> TokenStream {
    let dtype = ident(&format!("{dtype:?}"));
    let axes = axes.iter();
    quote!(runtime::TensorDecl { name: #name, dtype: runtime::DType::#dtype, axes: &[ #(#axes),* ] })
}

fn ident(name: &str) -> Ident {
    Ident::new(name, Span::call_site())
}
