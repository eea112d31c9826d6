//! Classifies the held-out split of scikit-learn's 8×8 digits (the `digits` example's model
//! and data) in batches of 1, 4 and 8 with ONE blob compiled with batch gears 1, 4 and 8,
//! and prints, per gear, the accuracy, the host throughput and the simulated time per batch
//! and per image. A batch of 3 (padded onto gear 4) shows what padding costs.
//!
//! ```sh
//! cargo run --release -p batching [-- ROUNDS]
//! ```
//!
//! The batch is a const parameter of the typed bindings (`digits::Inputs::<4>`): one `run`
//! takes any batch from 1 to 8 and a larger one does not compile.
#![forbid(unsafe_code)]

use std::error::Error;
use std::time::Instant;

use digits_data::{TestSet, argmax, load};

ge::ge_model!(pub Digits = "../digits/models/digits.onnx", gears(batch = [1, 4, 8]));

use digits::{Batch, Fits};

/// One batch size's results over the whole split.
struct GearRun {
    batch: usize,
    gear: usize,
    predictions: Vec<usize>,
    /// Host wall time of the fastest pass over the split.
    best_secs: f64,
    /// Simulated time of one batch (every full batch simulates the same).
    sim_ns: u64,
}

/// Classifies `data` in batches of `N` (a last partial batch runs through the untyped
/// `run_slices`, padded by the runtime), `rounds` times; keeps the fastest pass.
fn classify<const N: usize>(
    net: &mut digits::Digits<'_>,
    data: &TestSet,
    rounds: usize,
) -> Result<GearRun, Box<dyn Error>>
where
    Batch<N>: Fits,
{
    let mut inputs = digits::Inputs::<N>::boxed();
    let mut outputs = digits::Outputs::<N>::boxed();
    let mut run = GearRun {
        batch: N,
        gear: <Batch<N> as Fits>::GEAR,
        predictions: Vec::with_capacity(data.images.len()),
        best_secs: f64::INFINITY,
        sim_ns: 0,
    };
    for _ in 0..rounds.max(1) {
        run.predictions.clear();
        let start = Instant::now();
        for chunk in data.images.chunks(N) {
            if chunk.len() == N {
                for (item, image) in inputs.x.iter_mut().zip(chunk) {
                    item[0] = *image;
                }
                let report = net.run(&inputs, &mut outputs)?;
                run.sim_ns = report.time_ns;
                run.predictions
                    .extend(outputs.logits.iter().map(|l| argmax(l)));
            } else {
                let flat: Vec<f32> = chunk.iter().flatten().flatten().copied().collect();
                let mut logits = vec![0f32; chunk.len() * 10];
                let mut probs = vec![0f32; chunk.len() * 10];
                net.run_slices(&flat, &mut logits, &mut probs)?;
                run.predictions.extend(logits.chunks(10).map(argmax));
            }
        }
        run.best_secs = run.best_secs.min(start.elapsed().as_secs_f64());
    }
    Ok(run)
}

fn main() -> Result<(), Box<dyn Error>> {
    let rounds: usize = match std::env::args().nth(1) {
        Some(r) => r.parse()?,
        None => 5,
    };
    let data = load(&digits_data::data_dir())?;
    let n = data.labels.len();
    let mut arena = digits::Arena::boxed();
    let mut net = digits::Digits::new(&mut arena[..])?;
    let p = &net.device().profile;
    println!(
        "batching: {n} held-out 8x8 digits, one blob with batch gears {:?} ({} B; arena {} B) \
         on the simulated NPU (device `{}`: {} AI cores @ {} MHz, sink mode); host time: \
         the fastest of {rounds} passes, 1 thread",
        digits::GEARS,
        digits::BLOB.len(),
        digits::ARENA_BYTES,
        p.name,
        p.cores,
        p.clock_mhz,
    );
    let runs = [
        classify::<1>(&mut net, &data, rounds)?,
        classify::<4>(&mut net, &data, rounds)?,
        classify::<8>(&mut net, &data, rounds)?,
        classify::<3>(&mut net, &data, rounds)?,
    ];
    println!("batch  gear  accuracy            host images/s  sim us/batch  sim us/image");
    let mut failures = Vec::new();
    for r in &runs {
        let correct = (0..n)
            .filter(|&i| r.predictions[i] == usize::from(data.labels[i]))
            .count();
        let agree = (0..n)
            .filter(|&i| r.predictions[i] == usize::from(data.ort_predictions[i]))
            .count();
        let padded = if digits::GEARS[r.gear] == r.batch {
            String::new()
        } else {
            format!(" (padded to {})", digits::GEARS[r.gear])
        };
        println!(
            "{:>5}  {:>4}  {correct}/{n} = {:.6}  {:>13.0}  {:>12.3}  {:>12.3}{padded}",
            r.batch,
            r.gear,
            correct as f64 / n as f64,
            n as f64 / r.best_secs,
            r.sim_ns as f64 / 1e3,
            r.sim_ns as f64 / 1e3 / r.batch as f64,
        );
        if correct != data.ort_correct || agree != n {
            failures.push(format!(
                "batch {}: {correct}/{n} correct, {agree}/{n} agree with onnxruntime",
                r.batch
            ));
        }
    }
    println!(
        "onnxruntime accuracy: {}/{n} = {:.6}; every batch {}",
        data.ort_correct,
        data.ort_correct as f64 / n as f64,
        if failures.is_empty() {
            "equal, with the same prediction for every image"
        } else {
            "NOT equal"
        }
    );
    if !failures.is_empty() {
        return Err(failures.join("; ").into());
    }
    Ok(())
}
