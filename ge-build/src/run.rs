//! Running a compiled blob on the simulated device from owned tensors: what `ge run`,
//! `ge check`, `ge bench` and the tests share.

use ge_runtime::{AlignedBlob, Model, Session};
use ge_sim::{Observer, RunReport, SimDevice};

use crate::error::{CompileError, Result};
use crate::tensor::TensorData;

/// A loaded model with an arena, ready to run repeatedly.
pub struct Runner {
    blob: AlignedBlob,
    arena: Vec<u8>,
}

impl Runner {
    /// Validates `blob` and allocates its arena.
    pub fn new(blob: AlignedBlob) -> Result<Runner> {
        let model =
            Model::from_bytes(blob.as_bytes()).map_err(|e| CompileError::Model(e.to_string()))?;
        let arena = vec![0u8; model.arena_bytes_unaligned()];
        Ok(Runner { blob, arena })
    }

    /// The validated model.
    pub fn model(&self) -> Result<Model<'_>> {
        Model::from_bytes(self.blob.as_bytes()).map_err(|e| CompileError::Model(e.to_string()))
    }

    /// Proves that no two tasks unordered by streams and events touch overlapping arena bytes
    /// with a write (`--check-races`); the error names both tasks and the bytes.
    pub fn check_races(&self) -> std::result::Result<ge_sim::race::RaceStats, String> {
        let model = self.model().map_err(|e| e.to_string())?;
        ge_sim::race::check_races(&model).map_err(|r| {
            let name = |i: u32| {
                model.tasks().get(i as usize).map_or(String::new(), |t| {
                    format!("{} '{}'", model.task_op(t).name(), model.str(t.name))
                })
            };
            format!(
                "race: task {} ({}) and task {} ({}) run unordered and touch arena bytes {}..{} with a write",
                r.first,
                name(r.first),
                r.second,
                name(r.second),
                r.bytes.0,
                r.bytes.1
            )
        })
    }

    /// Runs with `inputs` in the model's input order; returns outputs and the device report.
    pub fn run<O: Observer>(
        &mut self,
        inputs: &[TensorData],
        device: SimDevice<O>,
    ) -> Result<(Vec<TensorData>, RunReport)> {
        let model = Model::from_bytes(self.blob.as_bytes())
            .map_err(|e| CompileError::Model(e.to_string()))?;
        if model.gear_count() > 0 {
            return run_gears(&model, &mut self.arena, inputs, device);
        }
        check_inputs(&model, inputs)?;
        let mut outs: Vec<TensorData> = (0..model.output_count())
            .filter_map(|i| model.output(i))
            .map(|o| TensorData {
                dtype: o.dtype,
                dims: o.shape.dims().to_vec(),
                bytes: vec![0u8; o.bytes()],
            })
            .collect();
        let ins: Vec<&[u8]> = inputs.iter().map(|t| t.bytes.as_slice()).collect();
        let mut out_bufs: Vec<&mut [u8]> =
            outs.iter_mut().map(|t| t.bytes.as_mut_slice()).collect();
        let mut session = Session::new(&model, &mut self.arena, device)
            .map_err(|e| CompileError::Model(e.to_string()))?;
        let report = session
            .run(&ins, &mut out_bufs)
            .map_err(|e| CompileError::Model(e.to_string()))?;
        Ok((outs, report))
    }
}

/// [`Runner::run`] on a model with gears: the smallest gear the inputs fit
/// (`Session::run_shaped`), outputs cut back to the actual batch.
fn run_gears<O: Observer>(
    model: &Model<'_>,
    arena: &mut [u8],
    inputs: &[TensorData],
    device: SimDevice<O>,
) -> Result<(Vec<TensorData>, RunReport)> {
    let err = |e: ge_runtime::Error| CompileError::Model(e.to_string());
    let shapes: Vec<&[usize]> = inputs.iter().map(|t| t.dims.as_slice()).collect();
    let gear = model.gear_for(&shapes).map_err(err)?;
    check_inputs_dtypes(&model.gear(gear).map_err(err)?, inputs)?;
    let mut outs = Vec::with_capacity(model.output_count());
    for i in 0..model.output_count() {
        let (o, s) = model
            .output(i)
            .zip(model.gear_output_shape(gear, &shapes, i))
            .ok_or_else(|| CompileError::Model("missing output".into()))?;
        outs.push(TensorData {
            dtype: o.dtype,
            dims: s.dims().to_vec(),
            bytes: vec![0u8; s.numel() * o.dtype.size()],
        });
    }
    let ins: Vec<&[u8]> = inputs.iter().map(|t| t.bytes.as_slice()).collect();
    let mut out_bufs: Vec<&mut [u8]> = outs.iter_mut().map(|t| t.bytes.as_mut_slice()).collect();
    let mut session = Session::new(model, arena, device).map_err(err)?;
    let (report, _) = session
        .run_shaped(&ins, &shapes, &mut out_bufs)
        .map_err(err)?;
    Ok((outs, report))
}

/// Checks the inputs' count and dtypes (their shapes pick a gear).
fn check_inputs_dtypes(model: &Model<'_>, inputs: &[TensorData]) -> Result<()> {
    if inputs.len() != model.input_count() {
        return Err(CompileError::Model(format!(
            "the model has {} inputs, {} given",
            model.input_count(),
            inputs.len()
        )));
    }
    for (i, t) in inputs.iter().enumerate() {
        let info = model
            .input(i)
            .ok_or_else(|| CompileError::Model("missing input".into()))?;
        if t.dtype != info.dtype {
            return Err(CompileError::Input {
                input: info.name.to_string(),
                reason: format!("expects {}, got {}", info.dtype.name(), t.dtype.name()),
            });
        }
    }
    Ok(())
}

/// Checks inputs against the model's declared dtypes and shapes, naming the first mismatch.
pub fn check_inputs(model: &Model<'_>, inputs: &[TensorData]) -> Result<()> {
    check_inputs_dtypes(model, inputs)?;
    for (t, info) in inputs
        .iter()
        .zip((0..inputs.len()).filter_map(|i| model.input(i)))
    {
        if t.dims != info.shape.dims() {
            return Err(CompileError::Input {
                input: info.name.to_string(),
                reason: format!(
                    "expects {} {:?}, got {} {:?}",
                    info.dtype.name(),
                    info.shape.dims(),
                    t.dtype.name(),
                    t.dims
                ),
            });
        }
    }
    Ok(())
}
