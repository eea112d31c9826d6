//! Loader and runtime unit tests on a hand-written blob (no compiler needed), small enough
//! for Miri: `cargo +nightly miri test -p ge-runtime` checks the unsafe arena views of
//! [`crate::Memory`] and the zero-copy table casts of [`crate::Model`].

extern crate std;

use std::boxed::Box;
use std::vec::Vec;

use crate::format::{
    ALIGN, BinaryOp, BinaryParams, DType, FORMAT_VERSION, Header, IoDesc, Location, MAGIC, Meta,
    NO_TENSOR, NoParams, OpKind, SectionEntry, SectionKind, StrRef, TaskDesc, TensorDesc,
};
use crate::{Device, Error, Limits, Memory, Model, Session, header_checksum};

/// A 64-byte aligned buffer for blobs and arenas.
#[repr(C, align(64))]
struct Aligned([u8; 4096]);

fn aligned(bytes: &[u8]) -> Box<Aligned> {
    let mut b = Box::new(Aligned([0; 4096]));
    b.0[..bytes.len()].copy_from_slice(bytes);
    b
}

struct Tables {
    strings: Vec<u8>,
    io: Vec<IoDesc>,
    tensors: Vec<TensorDesc>,
    tasks: Vec<TaskDesc>,
    task_io: Vec<u32>,
    params: Vec<u8>,
    weights: Vec<u8>,
    meta: Meta,
}

fn s(t: &mut Tables, text: &str) -> StrRef {
    let r = StrRef {
        offset: t.strings.len() as u32,
        len: text.len() as u32,
    };
    t.strings.extend_from_slice(text.as_bytes());
    r
}

fn tensor(loc: Location, index: u32, offset: u64, name: StrRef) -> TensorDesc {
    let mut dims = [0u32; 8];
    dims[0] = 4;
    TensorDesc {
        dtype: DType::F32 as u8,
        rank: 1,
        location: loc as u8,
        reserved: 0,
        index,
        dims,
        offset,
        bytes: 16,
        name,
    }
}

/// `y = copy(x) + w`: input x[4], weight w[4], arena a = copy(x), y = a + w (with a
/// workspace), two tasks on one stream.
fn tables() -> Tables {
    let mut t = Tables {
        strings: Vec::new(),
        io: Vec::new(),
        tensors: Vec::new(),
        tasks: Vec::new(),
        task_io: Vec::new(),
        params: Vec::new(),
        weights: Vec::new(),
        meta: bytemuck::Zeroable::zeroed(),
    };
    let (name, producer) = (s(&mut t, "tiny"), s(&mut t, "tests"));
    let (x, w, a, y, ws) = (
        s(&mut t, "x"),
        s(&mut t, "w"),
        s(&mut t, "a"),
        s(&mut t, "y"),
        s(&mut t, "ws"),
    );
    t.tensors = Vec::from([
        tensor(Location::Input, 0, 0, x),
        tensor(Location::Weight, 0, 0, w),
        tensor(Location::Arena, 0, 0, a),
        tensor(Location::Arena, 0, 64, y),
        tensor(Location::Arena, 0, 128, ws),
    ]);
    for v in [1.0f32, 2.0, 3.0, 4.0] {
        t.weights.extend_from_slice(&v.to_le_bytes());
    }
    t.io = Vec::from([
        IoDesc {
            name: x,
            tensor: 0,
            direction: 0,
        },
        IoDesc {
            name: y,
            tensor: 3,
            direction: 1,
        },
    ]);
    let copy = bytemuck::bytes_of(&NoParams::default()).to_vec();
    let add = BinaryParams {
        op: BinaryOp::Add as u32,
        act: Default::default(),
    };
    let (cn, an) = (s(&mut t, "copy"), s(&mut t, "add"));
    t.tasks.push(TaskDesc {
        op: OpKind::Copy as u16,
        input_count: 1,
        output_count: 1,
        stream: 0,
        in_place: 0,
        io_start: 0,
        params_offset: 0,
        params_len: copy.len() as u32,
        workspace: NO_TENSOR,
        name: cn,
    });
    t.params.extend_from_slice(&copy);
    t.params.resize(8, 0);
    t.tasks.push(TaskDesc {
        op: OpKind::Binary as u16,
        input_count: 2,
        output_count: 1,
        stream: 0,
        in_place: 0,
        io_start: 2,
        params_offset: 8,
        params_len: core::mem::size_of::<BinaryParams>() as u32,
        workspace: 4,
        name: an,
    });
    t.params.extend_from_slice(bytemuck::bytes_of(&add));
    t.task_io = Vec::from([0, 2, 2, 1, 3]);
    t.meta = Meta {
        name,
        producer,
        arena_bytes: 192,
        input_count: 1,
        output_count: 1,
        stream_count: 1,
        precision: 0,
        opset: 13,
        gear_flags: 0,
        reserved: [0; 4],
    };
    t
}

/// Serializes like `ge-build`'s writer: header, section table, 64-byte aligned sections.
fn write(t: &Tables) -> Vec<u8> {
    let sections: [(SectionKind, &[u8]); 8] = [
        (SectionKind::Meta, bytemuck::bytes_of(&t.meta)),
        (SectionKind::Strings, &t.strings),
        (SectionKind::Io, bytemuck::cast_slice(&t.io)),
        (SectionKind::Tensors, bytemuck::cast_slice(&t.tensors)),
        (SectionKind::Tasks, bytemuck::cast_slice(&t.tasks)),
        (SectionKind::TaskIo, bytemuck::cast_slice(&t.task_io)),
        (SectionKind::Params, &t.params),
        (SectionKind::Weights, &t.weights),
    ];
    let hl = core::mem::size_of::<Header>();
    let table_len = sections.len() * core::mem::size_of::<SectionEntry>();
    let mut out = std::vec![0u8; hl + table_len];
    let mut entries = Vec::new();
    for (kind, bytes) in sections {
        out.resize(out.len().next_multiple_of(ALIGN), 0);
        entries.push(SectionEntry {
            kind: kind as u32,
            reserved: 0,
            offset: out.len() as u64,
            len: bytes.len() as u64,
        });
        out.extend_from_slice(bytes);
    }
    out[hl..hl + table_len].copy_from_slice(bytemuck::cast_slice(&entries));
    fix(&mut out);
    out
}

/// Recomputes `file_len` and both checksums.
fn fix(out: &mut [u8]) {
    fix_version(out, FORMAT_VERSION);
}

/// Stamps `version` in the header, with `file_len` and both checksums recomputed.
fn fix_version(out: &mut [u8], version: u32) {
    let hl = core::mem::size_of::<Header>();
    let mut h = Header {
        magic: MAGIC,
        version,
        flags: 0,
        file_len: out.len() as u64,
        section_count: 8,
        header_crc: 0,
        body_crc: 0,
        reserved: [0; 7],
    };
    let table_end = hl + 8 * core::mem::size_of::<SectionEntry>();
    h.body_crc = crate::crc32(&out[table_end..]);
    h.header_crc = header_checksum(&h, &out[hl..table_end]);
    out[..hl].copy_from_slice(bytemuck::bytes_of(&h));
}

/// Runs `Copy` and `Binary Add` (f32) through [`Memory::with_task`], like the sim does.
struct Mock;

impl Device for Mock {
    type Report = usize;

    fn execute(&mut self, model: &Model<'_>, mem: &mut Memory<'_>) -> Result<usize, Error> {
        for (i, task) in model.tasks().iter().enumerate() {
            let op = model.task_op(task);
            mem.with_task(model, task, |ins, outs, ws| {
                ws.fill(0xab);
                let x = ins[0].ok_or(crate::KernelError::MissingTensor("x"))?;
                match op {
                    OpKind::Copy => outs[0].data.copy_from_slice(x.data),
                    _ => {
                        let w = ins[1].ok_or(crate::KernelError::MissingTensor("w"))?;
                        let (x, w) = (x.as_slice::<f32>()?, w.as_slice::<f32>()?);
                        let y = outs[0].as_slice_mut::<f32>()?;
                        for ((y, x), w) in y.iter_mut().zip(x).zip(w) {
                            *y = x + w;
                        }
                    }
                }
                Ok(())
            })
            .map_err(|reason| Error::Task {
                task: i as u32,
                op,
                reason,
            })?;
        }
        Ok(model.tasks().len())
    }
}

fn run(model: &Model<'_>, arena: &mut [u8]) -> Result<[f32; 4], Error> {
    let mut s = Session::new(model, arena, Mock)?;
    let mut y = [0f32; 4];
    let tasks = s.run_f32(&[&[10.0, 20.0, 30.0, 40.0]], &mut [&mut y])?;
    assert_eq!(tasks, 2);
    Ok(y)
}

#[test]
fn loads_and_runs() {
    let blob = write(&tables());
    let b = aligned(&blob);
    let m = Model::from_bytes(&b.0[..blob.len()]).expect("loads");
    assert_eq!(
        (m.name(), m.input_count(), m.output_count()),
        ("tiny", 1, 1)
    );
    assert_eq!(m.input(0).map(|i| (i.name, i.bytes())), Some(("x", 16)));
    assert_eq!(m.output(0).map(|o| o.name), Some("y"));
    let mut arena = aligned(&[]);
    assert_eq!(
        run(&m, &mut arena.0).expect("runs"),
        [11.0, 22.0, 33.0, 44.0]
    );
    // An arena at an odd address works when it has the slack.
    let n = m.arena_bytes_unaligned();
    assert_eq!(
        run(&m, &mut arena.0[1..1 + n]).expect("runs"),
        [11.0, 22.0, 33.0, 44.0]
    );
    assert_eq!(
        run(&m, &mut arena.0[1..n]).err(),
        Some(Error::ArenaTooSmall {
            needed: n,
            given: n - 1
        })
    );
}

#[test]
fn io_mismatches_are_errors() {
    let blob = write(&tables());
    let b = aligned(&blob);
    let m = Model::from_bytes(&b.0[..blob.len()]).expect("loads");
    let mut arena = aligned(&[]);
    let mut s = Session::new(&m, &mut arena.0, Mock).expect("binds");
    let mut y = [0u8; 16];
    assert!(matches!(
        s.run(&[], &mut [&mut y]),
        Err(Error::IoCount { .. })
    ));
    assert!(matches!(
        s.run(&[&[0u8; 15]], &mut [&mut y]),
        Err(Error::IoSize { .. })
    ));
    assert!(matches!(
        s.run(&[&[0u8; 16]], &mut [&mut y[..8]]),
        Err(Error::IoSize { .. })
    ));
}

#[test]
fn misaligned_blob_and_limits() {
    let blob = write(&tables());
    let b = aligned(&blob);
    assert!(matches!(
        Model::from_bytes(&b.0[1..blob.len()]),
        Err(Error::Misaligned { .. })
    ));
    let small = Limits {
        max_arena_bytes: 64,
        max_weight_bytes: 1 << 20,
    };
    assert!(matches!(
        Model::from_bytes_with_limits(&b.0[..blob.len()], &small),
        Err(Error::Limit { what: "arena", .. })
    ));
}

#[test]
fn every_truncation_and_byte_flip_is_an_error() {
    let blob = write(&tables());
    // Miri: every 13th position is enough to cover each section kind.
    let step = if cfg!(miri) { 13 } else { 1 };
    for cut in (0..blob.len()).step_by(step) {
        let b = aligned(&blob[..cut]);
        assert!(
            Model::from_bytes(&b.0[..cut]).is_err(),
            "cut at {cut} loaded"
        );
    }
    for i in (0..blob.len()).step_by(step) {
        let mut m = blob.clone();
        m[i] ^= 0x40;
        let b = aligned(&m);
        assert!(
            Model::from_bytes(&b.0[..m.len()]).is_err(),
            "flip at {i} loaded"
        );
    }
}

fn reject(t: &Tables, what: &str) {
    let blob = write(t);
    let b = aligned(&blob);
    match Model::from_bytes(&b.0[..blob.len()]) {
        Err(Error::Malformed { what: w, .. }) => assert_eq!(w, what),
        other => panic!("expected '{what}', got {other:?}"),
    }
}

#[test]
fn validator_rejects_bad_tables() {
    // An output overlapping an input of the same task: `&mut` next to `&` would alias.
    let mut t = tables();
    t.tensors[3].offset = 0;
    reject(&t, "task output overlaps another tensor of the task");
    // The workspace overlapping the output.
    let mut t = tables();
    t.tensors[4].offset = 64;
    reject(&t, "task output overlaps another tensor of the task");
    // A workspace id past the tensor table.
    let mut t = tables();
    t.tasks[1].workspace = 99;
    reject(&t, "task names no tensor");
    // An arena tensor past the arena.
    let mut t = tables();
    t.tensors[3].offset = 184;
    reject(&t, "arena tensor misaligned or outside the arena");
    // A weight past the weights.
    let mut t = tables();
    t.tensors[1].offset = 4;
    reject(&t, "weight tensor misaligned or outside the weights");
    // Dims whose product overflows.
    let mut t = tables();
    t.tensors[2].rank = 3;
    t.tensors[2].dims[..3].copy_from_slice(&[u32::MAX; 3]);
    reject(&t, "tensor size overflows");
    // Task io outside the io table, writing an input, unknown op, params of the wrong size.
    let mut t = tables();
    t.tasks[1].io_start = u32::MAX;
    reject(&t, "task io outside the io table");
    let mut t = tables();
    t.task_io[1] = 0;
    reject(&t, "task output is not in the arena");
    let mut t = tables();
    t.tasks[0].op = 999;
    reject(&t, "task has an unknown op");
    let mut t = tables();
    t.tasks[1].params_len = 4;
    reject(&t, "task parameter record has the wrong length");
    // Strings out of range and not UTF-8.
    let mut t = tables();
    t.meta.name.len = 10_000;
    reject(&t, "string out of range");
    let mut t = tables();
    t.strings[0] = 0xff;
    reject(&t, "string is not UTF-8");
}

#[test]
fn every_format_version_loads_with_only_its_kinds() {
    // A version-1 blob (written before `Recurrent` existed) loads and runs.
    let mut blob = write(&tables());
    fix_version(&mut blob, 1);
    let b = aligned(&blob);
    let m = Model::from_bytes(&b.0[..blob.len()]).expect("a version-1 blob loads");
    assert_eq!(m.version(), 1);
    let mut arena = aligned(&[]);
    assert_eq!(
        run(&m, &mut arena.0).expect("runs"),
        [11.0, 22.0, 33.0, 44.0]
    );
    // A task kind newer than the blob's version is malformed.
    let mut t = tables();
    t.tasks[1].op = OpKind::Recurrent as u16;
    let mut blob = write(&t);
    fix_version(&mut blob, 1);
    let b = aligned(&blob);
    assert!(matches!(
        Model::from_bytes(&b.0[..blob.len()]),
        Err(Error::Malformed {
            what: "task kind is newer than the blob's format version",
            ..
        })
    ));
    // Conv weights pre-packed need format 5: refused in a version-4 blob, loaded in a 5.
    let mut t = tables();
    let mut conv: crate::format::ConvParams = bytemuck::Zeroable::zeroed();
    conv.spatial = 2;
    let conv = conv.with_weight_layout(crate::format::WeightLayout::Panels);
    t.tasks[1].op = OpKind::Conv as u16;
    t.tasks[1].params_len = core::mem::size_of_val(&conv) as u32;
    t.params.truncate(8);
    t.params.extend_from_slice(bytemuck::bytes_of(&conv));
    for (v, ok) in [(4, false), (5, true)] {
        let mut blob = write(&t);
        fix_version(&mut blob, v);
        let b = aligned(&blob);
        let r = Model::from_bytes(&b.0[..blob.len()]);
        if ok {
            assert_eq!(r.err(), None, "version {v}");
        } else {
            assert!(matches!(
                r,
                Err(Error::Malformed {
                    what: "task parameters are newer than the blob's format version",
                    ..
                })
            ));
        }
    }
    // Versions outside the range this reader knows.
    for v in [crate::format::MIN_FORMAT_VERSION - 1, FORMAT_VERSION + 1] {
        let mut blob = write(&tables());
        fix_version(&mut blob, v);
        let b = aligned(&blob);
        assert_eq!(
            Model::from_bytes(&b.0[..blob.len()]).err(),
            Some(Error::Version {
                found: v,
                supported: FORMAT_VERSION
            })
        );
    }
}

#[test]
fn with_task_bounds_checks_views() {
    // Memory re-checks every range even for a validated model: a view never leaves its
    // buffer, whatever the descriptors say.
    let blob = write(&tables());
    let b = aligned(&blob);
    let m = Model::from_bytes(&b.0[..blob.len()]).expect("loads");
    let mut arena = [0u8; 192];
    let x = [0u8; 16];
    let inputs: [&[u8]; 1] = [&x];
    let mut mem = Memory::new(&mut arena, m.weights(), &inputs);
    let mut bad = m.tasks()[1];
    bad.io_start = 1_000;
    let r = mem.with_task(&m, &bad, |ins, outs, _| Ok((ins.len(), outs.len())));
    assert_eq!(r, Ok((0, 0)));
    let mut short = [0u8; 32];
    let mut mem = Memory::new(&mut short, m.weights(), &inputs);
    let r = mem.with_task(&m, &m.tasks()[1], |_, _, _| Ok(()));
    assert!(r.is_err(), "outputs past a short arena must be refused");
}
