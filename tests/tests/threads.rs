//! Results are bitwise identical whatever the host thread count: ResNet-50 (whose GEMMs are
//! split between slots) on 1, 2 and 3 threads of the persistent pool.

use ge_build::OptLevel;
use ge_runtime::AlignedBlob;
use ge_sim::SimDevice;
use ge_sim::threads::{Host, ThreadPool};
use ge_tests::{compile_at, corpus, random_inputs};

#[test]
fn resnet50_outputs_do_not_depend_on_the_thread_count() {
    let model = std::fs::read(corpus("light").join("resnet50/model.onnx")).expect("model");
    let c = compile_at(&model, OptLevel::O2);
    let inputs = random_inputs(&c, 11);
    let run = |threads: usize| {
        let mut r = ge_build::run::Runner::new(AlignedBlob::from_bytes(&c.blob)).expect("loads");
        let mut device = SimDevice::default();
        if threads > 1 {
            device.host = Host::on(ThreadPool::shared(threads));
        }
        r.run(&inputs, device).expect("runs").0
    };
    let one = run(1);
    for t in [2, 3] {
        let other = run(t);
        for (a, b) in one.iter().zip(&other) {
            assert_eq!(a.bytes, b.bytes, "{t} threads differ from 1");
        }
    }
}
