//! Kernel sets: which kernels a device can run. The device dispatches through its set, so a
//! binary that builds its device from a model's set ([`KernelSet::only`], generated next to
//! the blob by `ge_model!` and the Builder as `KERNELS`) references only those kernels'
//! functions and the linker drops every other one. [`KernelSet::ALL`] reaches every kernel
//! through the [`registry`](super::registry) and is what [`crate::SimDevice::new`] uses.

use core::fmt;

use ge_runtime::format::{DType, KernelId, KernelVariant, OpKind};

#[cfg(feature = "std")]
use super::halves;
use super::registry::{DTypes, InPlaceFn, RunFn, ShapeFn, kernel};
use super::{binary, pool, read_params, reduce, softmax};
use crate::cost::Work;

/// A kernel's function: out of place, or updating one input in place.
#[derive(Clone, Copy, Debug)]
pub enum KernelFn {
    Run(RunFn),
    InPlace(InPlaceFn),
}

/// One kernel a device can run.
#[derive(Clone, Copy, Debug)]
pub struct KernelEntry {
    pub id: KernelId,
    pub run: KernelFn,
    /// Element types of output 0 the function takes (the dispatcher refuses the others).
    pub dtypes: DTypes,
    /// The kind's work estimate (the device charges it; see [`crate::cost`]).
    pub work: ShapeFn<Work>,
}

/// The registry's kernel for `id`: the kind's function (out of place or in place) and the
/// element types it takes; `None` for an unknown kind, or an in-place variant of a kind
/// without one. The dtype is not checked here: a function that does not take it fails the
/// task with `UnsupportedDType`, exactly as with the full set.
pub const fn registry_entry(id: KernelId) -> Option<KernelEntry> {
    let Some(kind) = id.kind() else {
        return None;
    };
    let k = kernel(kind);
    match id.variant() {
        Some(KernelVariant::Plain) => Some(KernelEntry {
            id,
            run: KernelFn::Run(match typed_run(kind, id.dtype()) {
                Some(run) => run,
                None => k.run,
            }),
            dtypes: k.dtypes,
            work: k.work,
        }),
        Some(KernelVariant::InPlace) => match k.in_place {
            Some(ip) => Some(KernelEntry {
                id,
                run: KernelFn::InPlace(ip.run),
                dtypes: ip.dtypes,
                work: k.work,
            }),
            None => None,
        },
        None => None,
    }
}

/// Functions of one element type for the kinds whose registry function covers several and
/// carries sizeable code for the others: the entry of such a kind on that type links only
/// its own code (f32 pooling no integer code, f32 softmax no f64 code, f32 binaries and
/// reductions no integer, bool or comparison code). Each does exactly
/// what the kind's function does on that type. With `std`, the fp16/bf16 Conv, Gemm, GemmW8, MatMul, Attention, LayerNorm, Binary, Resize,
/// pooling, Softmax and vector programs run the [`super::halves`] kernels.
const fn typed_run(kind: OpKind, dtype: Option<DType>) -> Option<RunFn> {
    match (kind, dtype) {
        (OpKind::Pool, Some(DType::F32)) => {
            Some(|p, ins, outs, _, _| pool::run_pool_f32(&read_params(p)?, ins, outs))
        }
        (OpKind::Pool, Some(DType::I8 | DType::U8)) => {
            Some(|p, ins, outs, _, _| pool::run_pool_int(&read_params(p)?, ins, outs))
        }
        (OpKind::Binary, Some(DType::F32)) => {
            Some(|p, ins, outs, _, _| binary::run_binary_f32(&read_params(p)?, ins, outs))
        }
        (OpKind::Reduce, Some(DType::F32)) => {
            Some(|p, ins, outs, _, _| reduce::run_reduce_f32(&read_params(p)?, ins, outs))
        }
        (OpKind::Softmax, Some(DType::F32)) => {
            Some(|p, ins, outs, _, _| softmax::run_softmax_of::<f32>(&read_params(p)?, ins, outs))
        }
        #[cfg(feature = "std")]
        (OpKind::Conv, Some(DType::F16 | DType::Bf16)) => {
            Some(|p, ins, outs, ws, par| halves::conv::run(&read_params(p)?, ins, outs, ws, par))
        }
        #[cfg(feature = "std")]
        (OpKind::Gemm, Some(DType::F16 | DType::Bf16)) => {
            Some(|p, ins, outs, ws, par| halves::gemm::run(&read_params(p)?, ins, outs, ws, par))
        }
        #[cfg(feature = "std")]
        (OpKind::GemmW8, Some(DType::F16 | DType::Bf16)) => {
            Some(|p, ins, outs, ws, par| halves::gemm_w8::run(&read_params(p)?, ins, outs, ws, par))
        }
        #[cfg(feature = "std")]
        (OpKind::MatMul, Some(DType::F16 | DType::Bf16)) => {
            Some(|_, ins, outs, ws, par| halves::matmul::run(ins, outs, ws, par))
        }
        #[cfg(feature = "std")]
        (OpKind::Attention, Some(DType::F16 | DType::Bf16)) => {
            Some(|p, ins, outs, ws, _| halves::attention::run(&read_params(p)?, ins, outs, ws))
        }
        #[cfg(feature = "std")]
        (OpKind::LayerNorm, Some(DType::F16 | DType::Bf16)) => {
            Some(|p, ins, outs, ws, _| halves::layer_norm::run(p, ins, outs, ws))
        }
        #[cfg(feature = "std")]
        (OpKind::Binary, Some(DType::F16 | DType::Bf16)) => {
            Some(|p, ins, outs, ws, _| halves::binary::run(p, ins, outs, ws))
        }
        #[cfg(feature = "std")]
        (OpKind::Resize, Some(DType::F16 | DType::Bf16)) => {
            Some(|p, ins, outs, ws, _| halves::resize::run(p, ins, outs, ws))
        }
        #[cfg(feature = "std")]
        (OpKind::Pool, Some(DType::F16 | DType::Bf16)) => {
            Some(|p, ins, outs, ws, _| halves::pool::run(false, p, ins, outs, ws))
        }
        #[cfg(feature = "std")]
        (OpKind::GlobalPool, Some(DType::F16 | DType::Bf16)) => {
            Some(|p, ins, outs, ws, _| halves::pool::run(true, p, ins, outs, ws))
        }
        #[cfg(feature = "std")]
        (OpKind::Fused, Some(DType::F16 | DType::Bf16)) => {
            Some(|p, ins, outs, ws, _| halves::fused::run(&read_params(p)?, ins, outs, ws))
        }
        #[cfg(feature = "std")]
        (OpKind::Softmax, Some(DType::F16 | DType::Bf16)) => {
            Some(|p, ins, outs, ws, _| halves::softmax::run(p, ins, outs, ws))
        }
        _ => None,
    }
}

impl KernelEntry {
    /// The registry's kernel for `id`, for a `const` table: an unknown kernel is a compile
    /// error there (the bindings were generated by another ge).
    #[allow(
        clippy::panic,
        reason = "meant for const tables, where the panic is a compile error, never a run-time one"
    )]
    pub const fn of(id: KernelId) -> KernelEntry {
        match registry_entry(id) {
            Some(e) => e,
            None => panic!("ge-sim has no such kernel: regenerate the bindings"),
        }
    }
}

/// The kernels a device can run.
#[derive(Clone, Copy)]
pub struct KernelSet {
    /// The kernels of a listed set.
    listed: &'static [KernelEntry],
    /// Finds any kernel (the full set); `None` for a listed set, so that a listed set's
    /// binary references no registry function it does not list.
    any: Option<fn(KernelId) -> Option<KernelEntry>>,
}

impl KernelSet {
    /// Every kernel of the registry.
    pub const ALL: KernelSet = KernelSet {
        listed: &[],
        any: Some(registry_entry),
    };

    /// Exactly `entries` (e.g. a model's generated `KERNELS`).
    pub const fn only(entries: &'static [KernelEntry]) -> KernelSet {
        KernelSet {
            listed: entries,
            any: None,
        }
    }

    /// The kernel `id`, if the set has it.
    pub fn find(&self, id: KernelId) -> Option<KernelEntry> {
        match self.any {
            Some(any) => any(id),
            None => self.listed.iter().find(|e| e.id == id).copied(),
        }
    }

    /// True for [`KernelSet::ALL`].
    pub fn is_all(&self) -> bool {
        self.any.is_some()
    }

    /// The kernels of a listed set (empty for [`KernelSet::ALL`]).
    pub fn listed(&self) -> &'static [KernelEntry] {
        self.listed
    }
}

impl Default for KernelSet {
    fn default() -> Self {
        KernelSet::ALL
    }
}

impl fmt::Debug for KernelSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_all() {
            f.write_str("KernelSet::ALL")
        } else {
            f.debug_list()
                .entries(self.listed.iter().map(|e| e.id))
                .finish()
        }
    }
}
