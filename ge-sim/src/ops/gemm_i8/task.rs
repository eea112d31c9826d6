//! The `QGemm` task: reads the tensors of a [`QGemmParams`] task and runs [`qgemm`] over
//! every row of A (batch dims folded into M: B is one shared 2-D weight).
//!
//! A run-time activation zero point (dynamic quantization) cannot be folded at compile
//! time: its share of the correction, `za·adj_j`, is subtracted into an `n`-value i32
//! workspace once per task, so the GEMM itself never sees it.

use ge_runtime::format::{
    DType, QGEMM_OUT_I32, QGEMM_OUT_Q8, QGEMM_OUT_Q8_F32, QGEMM_OUT_Q8_TFLITE, QGemmParams, Shape,
    TensorMut, TensorRef,
};

use super::{Act, QGemm, QOut, QOutParams, Requant, qgemm};
use crate::ops::{KernelError, KernelResult, input, output};

/// Workspace bytes: the run-time correction (`n` i32) when the zero point is an input.
pub fn workspace_bytes(p: &QGemmParams, ins: &[Option<Shape>]) -> usize {
    if ins.get(5).copied().flatten().is_some() {
        (p.n as usize).saturating_mul(4)
    } else {
        0
    }
}

/// Runs one `QGemm` task. O(M·n·k).
pub fn run_qgemm(
    p: &QGemmParams,
    ins: &[Option<TensorRef<'_>>],
    outs: &mut [TensorMut<'_>],
    ws: &mut [u8],
) -> KernelResult {
    let at = input(ins, 0, "int8 GEMM A")?;
    let (k, n) = (p.k as usize, p.n as usize);
    if at.shape.rank() == 0 || at.shape.dim(at.shape.rank() - 1) != k {
        return Err(KernelError::Shape("int8 GEMM: A's last dim is not k"));
    }
    let m = at.shape.numel().checked_div(k).unwrap_or(0);
    let b = input(ins, 1, "int8 GEMM packed B")?.as_slice::<i8>()?;
    let mut corr = input(ins, 2, "int8 GEMM correction")?.as_slice::<i32>()?;
    let zb = match ins.get(3).copied().flatten() {
        Some(t) => t.as_slice::<i32>()?,
        None => &[],
    };
    if let Some(za) = ins.get(5).copied().flatten() {
        let z = activation_zero_point(za)?;
        corr = corrected(z, ins.get(6).copied().flatten(), corr, n, ws)?;
    }
    let rq: &[Requant] = match ins.get(4).copied().flatten() {
        Some(t) => bytemuck::try_cast_slice(t.as_slice::<i32>()?)
            .map_err(|_| KernelError::Shape("int8 GEMM: requantization is not (mult, shift)"))?,
        None => &[],
    };
    let yt = output(outs, 0, "int8 GEMM output")?;
    if yt.shape.numel() != m.saturating_mul(n) {
        return Err(KernelError::Shape("int8 GEMM: output is not M × n"));
    }
    let q = QOutParams { rq, zp: p.out_zp };
    let out = match (p.out, yt.dtype) {
        (QGEMM_OUT_I32, DType::I32) => QOut::I32 {
            c: yt.as_slice_mut::<i32>()?,
            ldc: n,
        },
        (QGEMM_OUT_Q8 | QGEMM_OUT_Q8_F32 | QGEMM_OUT_Q8_TFLITE, DType::U8) => QOut::U8 {
            c: yt.as_slice_mut::<u8>()?,
            ldc: n,
            q,
        },
        (QGEMM_OUT_Q8 | QGEMM_OUT_Q8_F32 | QGEMM_OUT_Q8_TFLITE, DType::I8) => QOut::I8 {
            c: yt.as_slice_mut::<i8>()?,
            ldc: n,
            q,
        },
        _ => {
            return Err(KernelError::UnsupportedDType(
                "int8 GEMM: output kind and element type disagree",
            ));
        }
    };
    match at.dtype {
        DType::U8 => run_on(at.as_slice::<u8>()?, m, n, k, b, corr, zb, out),
        DType::I8 => run_on(at.as_slice::<i8>()?, m, n, k, b, corr, zb, out),
        _ => Err(KernelError::UnsupportedDType(
            "int8 GEMM: A must be u8 or i8",
        )),
    }
}

#[allow(clippy::too_many_arguments)]
fn run_on<A: Act>(
    a: &[A],
    m: usize,
    n: usize,
    k: usize,
    b: &[i8],
    corr: &[i32],
    zb: &[i32],
    out: QOut<'_>,
) -> KernelResult {
    let g = QGemm {
        m,
        n,
        k,
        a,
        lda: k,
        b,
        corr,
        zb,
    };
    qgemm(&g, out)
}

/// The run-time activation zero point: one u8 or i8.
pub(super) fn activation_zero_point(za: TensorRef<'_>) -> Result<i32, KernelError> {
    match za.dtype {
        DType::U8 => za.as_slice::<u8>()?.first().map(|&v| i32::from(v)),
        DType::I8 => za.as_slice::<i8>()?.first().map(|&v| i32::from(v)),
        _ => None,
    }
    .ok_or(KernelError::Shape(
        "int8 GEMM: zero point must be one u8/i8",
    ))
}

/// `corr_j − z·adj_j` into the workspace.
pub(super) fn corrected<'w>(
    z: i32,
    adj: Option<TensorRef<'_>>,
    corr: &[i32],
    n: usize,
    ws: &'w mut [u8],
) -> Result<&'w [i32], KernelError> {
    let adj = adj
        .ok_or(KernelError::MissingTensor(
            "int8 GEMM zero-point adjustment",
        ))?
        .as_slice::<i32>()?;
    let bytes = ws
        .get_mut(..n.saturating_mul(4))
        .ok_or(KernelError::Shape("int8 GEMM: workspace too small"))?;
    let out: &mut [i32] = bytemuck::try_cast_slice_mut(bytes)
        .map_err(|_| KernelError::Shape("int8 GEMM: workspace misaligned"))?;
    if corr.len() != n || adj.len() != n {
        return Err(KernelError::Shape(
            "int8 GEMM: correction and adjustment need n values",
        ));
    }
    for ((o, &c), &d) in out.iter_mut().zip(corr).zip(adj) {
        *o = c.wrapping_sub(z.wrapping_mul(d));
    }
    Ok(out)
}
