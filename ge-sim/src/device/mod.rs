//! The simulated device: executes a model's task list (computing real results with the
//! kernels) and keeps the timeline the cost model gives.

mod timeline;

pub use crate::profile::{LaunchMode, Profile};
use timeline::Timeline;
pub use timeline::{END_RING, MAX_CORES, MAX_STREAMS};

use ge_runtime::format::{DType, MAX_TASK_IO, Shape, TaskDesc};
use ge_runtime::{Device, Error, Memory, Model};

use crate::cost::{TaskCost, Work};
use crate::ops::registry::estimate_work;
use crate::ops::{self, set::KernelSet};

/// One task as the device ran it, for profiles and traces.
#[derive(Clone, Copy, Debug)]
pub struct TaskRecord {
    pub index: u32,
    pub stream: u16,
    /// First core used, how many, and which (bit `c` = core `c`).
    pub first_core: u32,
    pub cores: u32,
    pub core_mask: u64,
    /// Start and end on the device timeline, in cycles from the run's start.
    pub start_cycle: u64,
    pub end_cycle: u64,
    pub work: Work,
    pub cost: TaskCost,
}

/// Receives every task record of a run (e.g. to print a profile). No allocation required.
pub trait Observer {
    /// Task `index` is about to run (a profiler starts its host clock here).
    fn before_task(&mut self, _index: usize) {}
    fn task(&mut self, model: &Model<'_>, task: &TaskDesc, record: &TaskRecord);
}

impl<T: Observer> Observer for &mut T {
    fn before_task(&mut self, index: usize) {
        (**self).before_task(index);
    }
    fn task(&mut self, model: &Model<'_>, task: &TaskDesc, record: &TaskRecord) {
        (**self).task(model, task, record);
    }
}

/// Observes nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoObserver;

impl Observer for NoObserver {
    fn task(&mut self, _: &Model<'_>, _: &TaskDesc, _: &TaskRecord) {}
}

/// Totals of one run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunReport {
    /// Simulated device time, cycles and nanoseconds (launch overheads included).
    pub cycles: u64,
    pub time_ns: u64,
    /// Global-memory bytes read and written.
    pub gm_bytes: u64,
    /// Host launches.
    pub launches: u64,
    pub tasks: u64,
    /// Cube multiply-accumulates, every precision (int8 ones included).
    pub cube_macs: u64,
    pub vector_ops: u64,
}

/// The simulated NPU.
#[derive(Clone, Debug)]
pub struct SimDevice<O: Observer = NoObserver> {
    pub profile: Profile,
    pub mode: LaunchMode,
    /// Most cores a task may use (the `--cores` option); 0 = all.
    pub max_cores: u32,
    pub observer: O,
    /// Host threads the kernels run on (results are the same whatever this is).
    pub host: crate::threads::Host,
    /// The kernels the device can run; a model needing another is refused.
    pub kernels: KernelSet,
}

impl SimDevice<NoObserver> {
    /// A device of `profile` in sink mode with every kernel ([`KernelSet::ALL`]).
    pub fn new(profile: Profile) -> Self {
        SimDevice::with_kernels(profile, KernelSet::ALL)
    }

    /// A device of `profile` in sink mode that can run only `kernels`: a binary that builds
    /// its devices this way from a model's `KERNELS` links no other kernel.
    pub const fn with_kernels(profile: Profile, kernels: KernelSet) -> Self {
        SimDevice {
            profile,
            mode: LaunchMode::Sink,
            max_cores: 0,
            observer: NoObserver,
            host: crate::threads::Host::SERIAL,
            kernels,
        }
    }
}

impl Default for SimDevice<NoObserver> {
    fn default() -> Self {
        SimDevice::new(Profile::EDGE)
    }
}

impl<O: Observer> SimDevice<O> {
    /// The same device reporting every task to `observer`.
    pub fn with_observer<P: Observer>(self, observer: P) -> SimDevice<P> {
        SimDevice {
            profile: self.profile,
            mode: self.mode,
            max_cores: self.max_cores,
            observer,
            host: self.host,
            kernels: self.kernels,
        }
    }

    fn cores(&self) -> u32 {
        let all = self.profile.cores.max(1);
        if self.max_cores == 0 {
            all
        } else {
            self.max_cores.min(all)
        }
    }
}

/// Global-memory bytes a task moves: inputs read once, outputs written once; a task that
/// `selects` (Gather, Slice) reads of its input 0 at most the bytes it writes.
pub(crate) fn task_traffic(model: &Model<'_>, task: &TaskDesc, selects: bool) -> u64 {
    let tensors = model.tensors();
    let bytes = |ids: &[u32]| {
        ids.iter()
            .filter_map(|&id| tensors.get(id as usize))
            .fold(0u64, |a, t| a.saturating_add(t.bytes))
    };
    let (ins, outs) = (model.task_inputs(task), model.task_outputs(task));
    let written = bytes(outs);
    match ins.split_first() {
        Some((first, rest)) if selects => {
            let data = bytes(core::slice::from_ref(first)).min(written);
            data.saturating_add(bytes(rest)).saturating_add(written)
        }
        _ => bytes(ins).saturating_add(written),
    }
}

/// The work of a task per `work` (its kind's estimator), from the shapes in the tensor
/// table.
fn task_work(model: &Model<'_>, task: &TaskDesc, work: impl Fn(ShapeArgs<'_>) -> Work) -> Work {
    let n = model
        .task_inputs(task)
        .len()
        .max(model.task_outputs(task).len());
    let w = if n <= SMALL_TASK_IO {
        task_work_n::<SMALL_TASK_IO>(model, task, work)
    } else {
        task_work_n::<MAX_TASK_IO>(model, task, work)
    };
    Work {
        half: task_is_half(model, task),
        ..w
    }
}

/// A task's parameter record, input shapes and output shapes.
type ShapeArgs<'s> = (&'s [u8], &'s [Option<Shape>], &'s [Shape]);

/// Shapes a side that [`task_work`] keeps on the stack for most tasks.
const SMALL_TASK_IO: usize = 8;

/// [`task_work`] with room for `N` shapes a side; never inlined, so that its frame exists
/// only while the work is estimated, not while the kernel runs. Only the arrays depend on
/// `N`: [`fill_shapes`] is one copy for both sizes.
#[inline(never)]
fn task_work_n<const N: usize>(
    model: &Model<'_>,
    task: &TaskDesc,
    work: impl Fn(ShapeArgs<'_>) -> Work,
) -> Work {
    let mut ins = [None; N];
    let mut outs = [Shape::scalar(); N];
    let (ni, no) = fill_shapes(model, task, &mut ins, &mut outs);
    work((model.task_params(task), &ins[..ni], &outs[..no]))
}

/// Fills `ins` and `outs` with the shapes of `task`'s tensors (as many as fit) and returns
/// how many of each there are.
fn fill_shapes(
    model: &Model<'_>,
    task: &TaskDesc,
    ins: &mut [Option<Shape>],
    outs: &mut [Shape],
) -> (usize, usize) {
    let tensors = model.tensors();
    let shape = |id: u32| tensors.get(id as usize).map(ge_runtime::tensor_shape);
    let (in_ids, out_ids) = (model.task_inputs(task), model.task_outputs(task));
    for (d, &id) in ins.iter_mut().zip(in_ids) {
        *d = shape(id);
    }
    for (d, &id) in outs.iter_mut().zip(out_ids) {
        *d = shape(id).unwrap_or_default();
    }
    (in_ids.len().min(ins.len()), out_ids.len().min(outs.len()))
}

/// True when the task's input 0 or output 0 is fp16/bf16 ([`Work::half`]).
fn task_is_half(model: &Model<'_>, task: &TaskDesc) -> bool {
    let first_half = |ids: &[u32]| {
        ids.first()
            .and_then(|&id| model.tensors().get(id as usize))
            .is_some_and(|t| t.dtype == DType::F16 as u8 || t.dtype == DType::Bf16 as u8)
    };
    first_half(model.task_inputs(task)) || first_half(model.task_outputs(task))
}

impl<O: Observer> SimDevice<O> {
    /// Predicts a run's figures from shapes alone (no kernels run): what the compile report
    /// shows. Equal to what [`Device::execute`] reports for the same model.
    pub fn predict(&self, model: &Model<'_>) -> RunReport {
        let mut tl = Timeline::start(self, model);
        for (i, task) in model.tasks().iter().enumerate() {
            let kind = model.task_op(task);
            let work = task_work(model, task, |(p, i, o)| estimate_work(kind, p, i, o));
            tl.charge(self, model, i, task, work);
        }
        tl.finish(&self.profile)
    }
}

impl<O: Observer> Device for SimDevice<O> {
    type Report = RunReport;

    fn execute(&mut self, model: &Model<'_>, mem: &mut Memory<'_>) -> Result<RunReport, Error> {
        let mut tl = Timeline::start(self, model);
        for (i, task) in model.tasks().iter().enumerate() {
            let op = model.task_op(task);
            let params = model.task_params(task);
            let id = model.task_kernel(task).ok_or(Error::Malformed {
                what: "task has no output",
                index: i as u64,
            })?;
            let entry = self
                .kernels
                .find(id)
                .ok_or(Error::MissingKernel { kernel: id })?;
            let par = self.host.get();
            let in_place = (task.in_place as usize).checked_sub(1);
            self.observer.before_task(i);
            mem.with_task(model, task, |ins, outs, ws| {
                ops::run_entry(&entry, params, in_place, ins, outs, ws, par)
            })
            .map_err(|reason| Error::Task {
                task: i as u32,
                op,
                reason,
            })?;
            let work = task_work(model, task, |(p, i, o)| (entry.work)(p, i, o));
            let record = tl.charge(self, model, i, task, work);
            self.observer.task(model, task, &record);
        }
        Ok(tl.finish(&self.profile))
    }

    fn check(&self, model: &Model<'_>) -> Result<(), Error> {
        match model.kernels().find(|&id| self.kernels.find(id).is_none()) {
            Some(kernel) => Err(Error::MissingKernel { kernel }),
            None => Ok(()),
        }
    }
}
