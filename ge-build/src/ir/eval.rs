//! Evaluates one op on constant inputs with the device's own kernels, so constant folding
//! and the device can never disagree. Buffers are 64-byte aligned copies.

use ge_runtime::KernelError;
use ge_runtime::format::{DType, Shape, TensorMut, TensorRef};

use super::Op;
use crate::tensor::TensorData;

/// 64-byte aligned scratch bytes.
struct Aligned(Vec<[u64; 8]>, usize);

/// Why an evaluation's buffer could not be made: the host refused the allocation (an
/// error, never an abort: the compiler may run inside rustc).
const NO_MEMORY: KernelError =
    KernelError::Shape("constant folding: the host could not allocate the value");

impl Aligned {
    fn zeroed(len: usize) -> Result<Aligned, KernelError> {
        let n = len.div_ceil(64);
        let mut v = Vec::new();
        v.try_reserve_exact(n).map_err(|_| NO_MEMORY)?;
        v.resize(n, [0u64; 8]);
        Ok(Aligned(v, len))
    }
    fn from(bytes: &[u8]) -> Result<Aligned, KernelError> {
        let mut a = Aligned::zeroed(bytes.len())?;
        a.bytes_mut().copy_from_slice(bytes);
        Ok(a)
    }
    fn bytes(&self) -> &[u8] {
        &bytemuck::cast_slice(&self.0)[..self.1]
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        &mut bytemuck::cast_slice_mut(&mut self.0)[..self.1]
    }
}

fn shape(dims: &[usize]) -> Result<Shape, KernelError> {
    Shape::new(dims).ok_or(KernelError::Shape("rank above 8"))
}

/// Runs `op` on `inputs`, producing outputs of the given dtypes and shapes.
pub fn eval(
    op: &Op,
    inputs: &[Option<&TensorData>],
    outputs: &[(DType, Vec<usize>)],
) -> Result<Vec<TensorData>, KernelError> {
    let (kind, params) = op.lower();
    let ins_buf: Vec<Option<(Aligned, DType, Shape)>> = inputs
        .iter()
        .map(|t| {
            t.map(|t| Ok((Aligned::from(&t.bytes)?, t.dtype, shape(&t.dims)?)))
                .transpose()
        })
        .collect::<Result<_, KernelError>>()?;
    let ins: Vec<Option<TensorRef<'_>>> = ins_buf
        .iter()
        .map(|t| {
            t.as_ref().map(|(a, d, s)| TensorRef {
                dtype: *d,
                shape: *s,
                data: a.bytes(),
            })
        })
        .collect();
    let mut out_bufs: Vec<(Aligned, DType, Shape)> = outputs
        .iter()
        .map(|(d, dims)| {
            let len = crate::onnx::tensor_bytes(*d, dims)
                .and_then(|b| usize::try_from(b).ok())
                .ok_or(KernelError::Shape(
                    "constant folding: the value's size overflows",
                ))?;
            Ok((Aligned::zeroed(len)?, *d, shape(dims)?))
        })
        .collect::<Result<_, KernelError>>()?;
    let in_shapes: Vec<Option<Shape>> = ins.iter().map(|t| t.map(|t| t.shape)).collect();
    let out_shapes: Vec<Shape> = out_bufs.iter().map(|o| o.2).collect();
    let mut ws = Aligned::zeroed(ge_sim::target::workspace_bytes_for(
        kind,
        &params,
        &in_shapes,
        &out_shapes,
        out_bufs.first().map_or(DType::F32, |o| o.1),
    ))?;
    {
        let mut outs: Vec<TensorMut<'_>> = out_bufs
            .iter_mut()
            .map(|(a, d, s)| TensorMut {
                dtype: *d,
                shape: *s,
                data: a.bytes_mut(),
            })
            .collect();
        ge_sim::target::execute(kind, &params, &ins, &mut outs, ws.bytes_mut())?;
    }
    Ok(out_bufs
        .into_iter()
        .zip(outputs)
        .map(|((a, d, _), (_, dims))| TensorData {
            dtype: d,
            dims: dims.clone(),
            bytes: a.bytes().to_vec(),
        })
        .collect())
}
