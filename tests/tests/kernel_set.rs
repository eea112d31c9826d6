//! Kernel sets: a blob lists the kernels its tasks run, a device built with only some
//! kernels refuses a blob needing another — when the session binds it, with an error naming
//! the kernel — and a device with exactly the blob's kernels runs it as the full set does.

use ge_build::{CompileOptions, compile_bytes};
use ge_runtime::format::{DType, KernelId, KernelVariant, OpKind};
use ge_runtime::{AlignedBlob, Device, Error, Memory, Model, Session};

use ge_sim::ops::set::{KernelEntry, KernelSet};
use ge_sim::{Profile, SimDevice};
use ge_tests::onnx_builder::ModelBuilder;

/// `Softmax(Relu(x) + b)`: Unary (in place on its second task), Binary and Softmax.
fn model() -> Vec<u8> {
    let mut m = ModelBuilder::new(13);
    m.input("x", &[2, 8])
        .weight("b", &[8], -1.0, 1.0)
        .node("Relu", &["x"], &["r"], &[])
        .node("Add", &["r", "b"], &["a"], &[])
        .node("Softmax", &["a"], &["y"], &[])
        .output("y", &[2, 8]);
    m.build()
}

fn blob() -> AlignedBlob {
    let opts = CompileOptions {
        opt_level: ge_build::OptLevel::O1,
        ..CompileOptions::default()
    };
    let c = compile_bytes(&model(), None, &opts).expect("compiles");
    AlignedBlob::from_bytes(&c.blob)
}

/// Every kernel of the model, as a leaked `'static` table (what codegen emits as `KERNELS`).
fn entries(model: &Model<'_>, except: Option<KernelId>) -> &'static [KernelEntry] {
    let mut ids: Vec<KernelId> = model.kernels().filter(|&k| Some(k) != except).collect();
    ids.sort_unstable();
    ids.dedup();
    let table: Vec<KernelEntry> = ids.into_iter().map(KernelEntry::of).collect();
    Box::leak(table.into_boxed_slice())
}

/// A device that runs a model without checking its kernels first.
struct NoCheck(SimDevice);

impl Device for NoCheck {
    type Report = ge_sim::RunReport;
    fn execute(&mut self, model: &Model<'_>, mem: &mut Memory<'_>) -> Result<Self::Report, Error> {
        self.0.execute(model, mem)
    }
}

fn run<D: Device>(model: &Model<'_>, device: D) -> Result<Vec<u8>, Error> {
    let mut arena = vec![0u8; model.arena_bytes_unaligned()];
    let x: Vec<u8> = (0..16)
        .flat_map(|i| (i as f32 * 0.3 - 2.0).to_le_bytes())
        .collect();
    let mut y = vec![0u8; 64];
    Session::new(model, &mut arena, device)?.run(&[&x], &mut [&mut y])?;
    Ok(y)
}

#[test]
fn the_blob_lists_the_kernels_its_tasks_run() {
    let blob = blob();
    let model = Model::from_bytes(blob.as_bytes()).expect("loads");
    let listed: Vec<KernelId> = model.kernels().collect();
    let mut sorted = listed.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(listed, sorted, "the kernels section is sorted and unique");
    for t in model.tasks() {
        let k = model.task_kernel(t).expect("a task has an output");
        assert!(listed.contains(&k), "{k} is not listed");
    }
    let softmax = KernelId::new(OpKind::Softmax, DType::F32, KernelVariant::Plain);
    assert!(listed.contains(&softmax), "{listed:?}");
}

#[test]
fn a_device_with_exactly_the_blobs_kernels_runs_it_like_the_full_set() {
    let blob = blob();
    let model = Model::from_bytes(blob.as_bytes()).expect("loads");
    let only = SimDevice::with_kernels(Profile::EDGE, KernelSet::only(entries(&model, None)));
    let all = SimDevice::new(Profile::EDGE);
    assert_eq!(
        run(&model, only).expect("runs"),
        run(&model, all).expect("runs")
    );
}

#[test]
fn a_device_without_a_kernel_the_blob_needs_refuses_it_by_name() {
    let blob = blob();
    let model = Model::from_bytes(blob.as_bytes()).expect("loads");
    let softmax = KernelId::new(OpKind::Softmax, DType::F32, KernelVariant::Plain);
    let kernels = KernelSet::only(entries(&model, Some(softmax)));
    let device = SimDevice::with_kernels(Profile::EDGE, kernels);
    // Refused when the session binds the device, before anything runs.
    let mut arena = vec![0u8; model.arena_bytes_unaligned()];
    let err = Session::new(&model, &mut arena, device.clone())
        .err()
        .expect("refused");
    assert_eq!(err, Error::MissingKernel { kernel: softmax });
    let msg = err.to_string();
    assert!(msg.contains("Softmax/float32"), "{msg}");
    // The device refuses at the task too, should a device skip the check at binding.
    let err = run(&model, NoCheck(device)).expect_err("refused");
    assert_eq!(err, Error::MissingKernel { kernel: softmax });
    // The empty set refuses the first kernel the blob lists.
    let first = model.kernels().next().expect("some kernel");
    let device = SimDevice::with_kernels(Profile::EDGE, KernelSet::only(&[]));
    assert_eq!(
        run(&model, device),
        Err(Error::MissingKernel { kernel: first })
    );
}
