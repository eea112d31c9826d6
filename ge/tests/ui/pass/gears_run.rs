//! Gears in the macro: batch gears typed by a const batch `N` (a batch between gears runs
//! padded and matches single runs), image-size gears as one module per gear; builds without
//! warnings and runs.
#![deny(warnings, missing_docs, unused_doc_comments)]

ge::ge_model!(pub Digits = "models/digits.onnx", gears(batch = [1, 4, 8]));
ge::ge_model!(pub Widths = "models/widths.onnx", gears(image_size = [[4, 8], [4, 16]]));

fn main() {
    assert_eq!(digits::GEARS, [1, 4, 8]);
    assert_eq!(digits::MAX_BATCH, 8);
    assert_eq!(digits::INPUT_X_SHAPE, [8, 1, 8, 8]);
    assert_eq!(<digits::Batch<3> as digits::Fits>::GEAR, 1);
    let mut arena = digits::Arena::boxed();
    let mut net = digits::Digits::new(&mut arena[..]).unwrap();
    // Batch 3 runs on gear 4, padded, and gives each item what a batch of 1 gives.
    let mut x3 = digits::Inputs::<3>::zeroed();
    for (k, item) in x3.x.iter_mut().enumerate() {
        item[0][k + 2] = [1.0; 8];
        item[0][7 - k][k] = 0.5;
    }
    let mut y3 = digits::Outputs::<3>::boxed();
    net.run(&x3, &mut y3).unwrap();
    for k in 0..3 {
        let mut x1 = digits::Inputs::<1>::zeroed();
        x1.x[0] = x3.x[k];
        let mut y1 = digits::Outputs::<1>::default();
        net.run(&x1, &mut y1).unwrap();
        for (a, b) in y1.probs[0].iter().zip(&y3.probs[k]) {
            assert!((a - b).abs() <= 1e-6, "item {k}: {a} vs {b}");
        }
    }

    assert_eq!(widths::h4_w8::INPUT_X_SHAPE, [1, 1, 4, 8]);
    assert_eq!(widths::h4_w16::OUTPUT_Y_SHAPE, [1, 2, 2, 8]);
    assert_eq!((widths::h4_w8::GEAR, widths::h4_w16::GEAR), (0, 1));
    let mut arena = widths::Arena::new();
    let mut net = widths::Widths::new(&mut arena).unwrap();
    let mut x = widths::h4_w16::Inputs::zeroed();
    x.x[0][0][1][3] = 1.0;
    let mut y = widths::h4_w16::Outputs::zeroed();
    let report = net.run(&x, &mut y).unwrap();
    assert!(report.tasks > 0);
    assert!(y.y[0].iter().flatten().flatten().any(|&v| v != 0.0));
    let mut small = widths::h4_w8::Outputs::zeroed();
    net.run(&widths::h4_w8::Inputs::zeroed(), &mut small).unwrap();
}
