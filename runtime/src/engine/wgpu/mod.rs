//! Native WebGPU through wgpu: the quantized-linear kernels of the webgpu
//! cells' quantization checks. One device per test process (the adapter
//! lookup is [`hwmatrix_platforms::wgpu_adapter`], shared with `gen doctor`), one
//! compiled pipeline per weight width (16, 8, 4, 2 bits), and a blocking
//! product of activations with packed weights. Nothing here decides whether
//! a result is good: [`crate::checks::quantization`] compares it with the CPU.

use std::sync::OnceLock;
use std::time::Duration;

use hwmatrix_platforms::wgpu_adapter::{self, AdapterReport};
use wgpu::util::DeviceExt;

use crate::error::{CheckError, ErrorKind};
use crate::quant::Packed;

const SHADER: &str = include_str!("quantized_linear.wgsl");
const WORKGROUP: u32 = 64;
/// A product of a tiny model's layer takes milliseconds on lavapipe; a hung driver must not hang the test run.
const RUN_LIMIT: Duration = Duration::from_secs(60);

pub struct Gpu {
    pub adapter: AdapterReport,
    device: wgpu::Device,
    queue: wgpu::Queue,
    layout: wgpu::BindGroupLayout,
    /// By width: 16, 8, 4, 2 bits.
    pipelines: Vec<(u32, wgpu::ComputePipeline)>,
}

/// The process's device, opened on first use; its failure is kept and repeated.
pub fn gpu() -> Result<&'static Gpu, CheckError> {
    static GPU: OnceLock<Result<Gpu, String>> = OnceLock::new();
    GPU.get_or_init(open)
        .as_ref()
        .map_err(|message| CheckError::new(ErrorKind::PlatformAbsent, message.clone()))
}

fn open() -> Result<Gpu, String> {
    let (adapter, report) = wgpu_adapter::request()?;
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("hwmatrix quantized linear"),
        ..Default::default()
    }))
    .map_err(|e| format!("wgpu's adapter {} refused a device: {e}", report.summary()))?;
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("quantized_linear.wgsl"),
        source: wgpu::ShaderSource::Wgsl(SHADER.into()),
    });
    let storage = |binding, read_only| wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Storage { read_only },
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    };
    let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("quantized linear"),
        entries: &[
            wgpu::BindGroupLayoutEntry {
                binding: 0,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Uniform,
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            },
            storage(1, true),
            storage(2, true),
            storage(3, true),
            storage(4, false),
        ],
    });
    let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some("quantized linear"),
        bind_group_layouts: &[Some(&layout)],
        immediate_size: 0,
    });
    let pipelines = [16u32, 8, 4, 2]
        .into_iter()
        .map(|bits| {
            let constants = [("BITS", f64::from(bits))];
            let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some("quantized linear"),
                layout: Some(&pipeline_layout),
                module: &module,
                entry_point: Some("main"),
                compilation_options: wgpu::PipelineCompilationOptions {
                    constants: &constants,
                    ..Default::default()
                },
                cache: None,
            });
            (bits, pipeline)
        })
        .collect();
    Ok(Gpu {
        adapter: report,
        device,
        queue,
        layout,
        pipelines,
    })
}

impl Gpu {
    /// `x [rows, in] · dequant(w)ᵀ` on the adapter: `[rows, out]`.
    pub fn linear(&self, x: &[f32], rows: usize, w: &Packed) -> Result<Vec<f32>, CheckError> {
        let failed = |message: String| CheckError::new(ErrorKind::RunFailed, message);
        let pipeline = &self
            .pipelines
            .iter()
            .find(|(bits, _)| *bits == w.bits)
            .ok_or_else(|| failed(format!("no kernel for {} bits", w.bits)))?
            .1;
        let to_u32 = |n: usize| {
            u32::try_from(n).map_err(|_| failed(format!("{n} does not fit the kernel's u32 sizes")))
        };
        let dims = [
            rows,
            w.in_features,
            w.out_features,
            w.group_size,
            w.words_per_row(),
            w.groups_per_row(),
        ]
        .into_iter()
        .map(to_u32)
        .collect::<Result<Vec<u32>, _>>()?;
        // wgpu reports invalid work to a handler that panics by default; a scope turns it into this check's error.
        let out_of_memory = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let (buffers, readback, y_bytes) = self.buffers(x, rows, &dims, w);
        let submission = self.dispatch(pipeline, &buffers, &dims, &readback, y_bytes);
        for scope in [validation, out_of_memory] {
            if let Some(error) = pollster::block_on(scope.pop()) {
                return Err(failed(format!(
                    "wgpu refused the kernel's work on {}: {error}",
                    self.adapter.summary()
                )));
            }
        }
        self.read_back(&readback, submission)
    }

    /// The kernel's bindings (dims, x, the packed words and groups, y) and
    /// the buffer y is read back through.
    fn buffers(
        &self,
        x: &[f32],
        rows: usize,
        dims: &[u32],
        w: &Packed,
    ) -> ([wgpu::Buffer; 5], wgpu::Buffer, u64) {
        let init = |label, contents: &[u8], usage| {
            self.device
                .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some(label),
                    contents,
                    usage,
                })
        };
        // 16-bit weights have no groups; a binding cannot be empty.
        let groups: &[u32] = if w.groups.is_empty() { &[0] } else { &w.groups };
        let y_bytes = (rows * w.out_features * 4) as u64;
        let buffers = [
            init(
                "dims",
                bytemuck::cast_slice(dims),
                wgpu::BufferUsages::UNIFORM,
            ),
            init("x", bytemuck::cast_slice(x), wgpu::BufferUsages::STORAGE),
            init(
                "words",
                bytemuck::cast_slice(&w.words),
                wgpu::BufferUsages::STORAGE,
            ),
            init(
                "groups",
                bytemuck::cast_slice(groups),
                wgpu::BufferUsages::STORAGE,
            ),
            self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("y"),
                size: y_bytes,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            }),
        ];
        let readback = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("y readback"),
            size: y_bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        (buffers, readback, y_bytes)
    }

    /// Encodes and submits the kernel over `buffers`, and the copy of y to `readback`.
    fn dispatch(
        &self,
        pipeline: &wgpu::ComputePipeline,
        buffers: &[wgpu::Buffer; 5],
        dims: &[u32],
        readback: &wgpu::Buffer,
        y_bytes: u64,
    ) -> wgpu::SubmissionIndex {
        let entries: Vec<wgpu::BindGroupEntry> = buffers
            .iter()
            .enumerate()
            .map(|(i, b)| wgpu::BindGroupEntry {
                binding: i as u32,
                resource: b.as_entire_binding(),
            })
            .collect();
        let bind_group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("quantized linear"),
            layout: &self.layout,
            entries: &entries,
        });
        let mut encoder = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("quantized linear"),
            });
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("quantized linear"),
                timestamp_writes: None,
            });
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, &bind_group, &[]);
            pass.dispatch_workgroups(dims[2].div_ceil(WORKGROUP), dims[0], 1);
        }
        encoder.copy_buffer_to_buffer(&buffers[4], 0, readback, 0, y_bytes);
        self.queue.submit([encoder.finish()])
    }

    /// Waits for the kernel (within the run limit) and reads y back.
    fn read_back(
        &self,
        readback: &wgpu::Buffer,
        submission: wgpu::SubmissionIndex,
    ) -> Result<Vec<f32>, CheckError> {
        let failed = |message: String| CheckError::new(ErrorKind::RunFailed, message);
        let slice = readback.slice(..);
        let (sender, receiver) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |result| {
            let _ = sender.send(result);
        });
        self.device
            .poll(wgpu::PollType::Wait {
                submission_index: Some(submission),
                timeout: Some(RUN_LIMIT),
            })
            .map_err(|e| {
                CheckError::new(
                    ErrorKind::Timeout,
                    format!(
                        "the kernel did not finish on {} within {RUN_LIMIT:?}: {e}",
                        self.adapter.summary()
                    ),
                )
            })?;
        receiver
            .recv_timeout(RUN_LIMIT)
            .map_err(|_| {
                CheckError::new(
                    ErrorKind::Timeout,
                    "reading the kernel's output back never completed",
                )
            })?
            .map_err(|e| failed(format!("reading the kernel's output back failed: {e}")))?;
        let view = slice
            .get_mapped_range()
            .map_err(|e| failed(format!("the kernel's output cannot be read: {e:?}")))?;
        let y = bytemuck::cast_slice::<u8, f32>(&view).to_vec();
        drop(view);
        readback.unmap();
        Ok(y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quant::{matmul, max_abs_difference, quantize};

    /// Each width's kernel against the CPU's product of the same packed weights, on
    /// sizes that leave partial words, groups and workgroups.
    #[test]
    fn each_width_computes_what_the_cpu_computes_from_the_same_codes() {
        let gpu = gpu().unwrap_or_else(|e| panic!("{}", e.message));
        let (rows, inp, out) = (3, 70, 67);
        let w: Vec<f32> = (0..out * inp)
            .map(|i| ((i * 7919 % 1000) as f32 / 500.0) - 1.0)
            .collect();
        let x: Vec<f32> = (0..rows * inp)
            .map(|i| ((i * 104_729 % 997) as f32 / 498.5) - 1.0)
            .collect();
        for bits in [16, 8, 4, 2] {
            let packed = quantize(&w, out, inp, bits, 32);
            let got = gpu
                .linear(&x, rows, &packed)
                .unwrap_or_else(|e| panic!("{bits} bits: {}", e.message));
            let want = matmul(&x, rows, &packed.dequantize(), out, inp);
            let difference = max_abs_difference(&got, &want);
            assert!(
                difference < 1e-4,
                "{bits} bits on {}: kernel and CPU differ by {difference}",
                gpu.adapter.summary()
            );
        }
    }

    /// Work wgpu refuses (here an empty activation buffer) is the check's error, not a panic of wgpu's default handler.
    #[test]
    fn refused_work_is_an_error() {
        let gpu = gpu().unwrap_or_else(|e| panic!("{}", e.message));
        let packed = quantize(&[0.5; 32], 1, 32, 4, 32);
        let error = gpu
            .linear(&[], 0, &packed)
            .expect_err("an empty binding is invalid");
        assert!(
            error.message.contains("wgpu refused the kernel's work"),
            "{}",
            error.message
        );
    }
}
