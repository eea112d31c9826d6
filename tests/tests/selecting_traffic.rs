//! The simulated device charges a selecting task (Gather, Slice) for the elements it picks,
//! not for the whole tensor it picks them from: an embedding lookup of 4 rows out of a
//! 4,096 × 64 table moves 4 rows (read, then written) and the indices — about 2 KB, not the
//! table's 1 MB.

use ge_build::OptLevel;
use ge_tests::onnx_builder::{Attr, ModelBuilder};
use ge_tests::{compile_at, random_inputs, run};

#[test]
fn a_gather_is_charged_the_rows_it_picks() {
    let (rows, dim) = (4096usize, 64usize);
    let ids = [7i64, 4000, 7, 123];
    let mut m = ModelBuilder::new(13);
    m.input("table", &[rows, dim])
        .ints("ids", &ids)
        .node("Gather", &["table", "ids"], &["y"], &[("axis", Attr::I(0))])
        .output("y", &[ids.len(), dim]);
    let c = compile_at(&m.build(), OptLevel::O2);
    let picked = (ids.len() * dim * 4) as u64;
    let gm = c.report.sim.gm_bytes;
    let table = (rows * dim * 4) as u64;
    assert!(
        gm >= 2 * picked && gm <= 2 * picked + 64,
        "Gather moved {gm} bytes: the picked rows are {picked}, the table {table}"
    );
    // And it picks the right rows.
    let x = random_inputs(&c, 1);
    let y = run(&c, &x);
    let t = x[0].to_f32_vec();
    let want: Vec<f32> = ids
        .iter()
        .flat_map(|&i| t[i as usize * dim..(i as usize + 1) * dim].to_vec())
        .collect();
    assert_eq!(y[0].to_f32_vec(), want);
}
