//! The generated bindings' host-thread option: the same model on a 2-thread pool gives the
//! same bytes as on the calling thread.

ge::ge_model!(
    Digits = "models/digits.onnx",
    opt_level = 2,
    input_shape(x = [1, 1, 8, 8])
);

#[test]
fn two_host_threads_give_the_same_outputs() {
    let mut inputs = digits::Inputs::zeroed();
    for (i, v) in inputs.x[0][0].iter_mut().flatten().enumerate() {
        *v = ((i * 7919) % 17) as f32 / 4.0;
    }
    let (mut a1, mut a2) = (digits::Arena::new(), digits::Arena::new());
    let mut serial = digits::Digits::new(&mut a1).unwrap();
    let mut pooled = digits::Digits::new(&mut a2)
        .unwrap()
        .with_host(ge::host_threads(2));
    assert_eq!(pooled.device().host.threads(), 2);
    let (mut o1, mut o2) = (digits::Outputs::zeroed(), digits::Outputs::zeroed());
    serial.run(&inputs, &mut o1).unwrap();
    pooled.run(&inputs, &mut o2).unwrap();
    let bits = |o: &digits::Outputs| o.probs[0].map(f32::to_bits);
    assert_eq!(bits(&o1), bits(&o2));
}
