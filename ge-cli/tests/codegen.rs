//! The host kernels compiled as written: a guard on the machine code of the `ge` binary this
//! test suite builds, because two sessions in a row lost 1.2–2.4× on hot tiles to code
//! generation that moved with unrelated edits, and only a benchmark noticed.
//!
//! - No intrinsic is called out of line. `core::arch` intrinsics are meant to become one
//!   instruction; a call to one (`_mm512_or_ps` from a kernel that does not enable its
//!   AVX-512DQ, or a load inside an `array::from_fn` closure compiled without the caller's
//!   target features) costs a call and a trip through memory per use.
//! - No register tile keeps its accumulators on the stack: in the blocked conv tiles and the
//!   GEMM blocks (AVX-512 and AVX2), an FMA whose result is stored straight to the stack
//!   means LLVM gave up keeping the accumulator array in registers (every FMA of
//!   SqueezeNet's 12-pixel pointwise tile was followed by such a store).
//!
//! Optimized x86-64 builds only (`cargo test --release`, as CI runs), and it needs `objdump`
//! (GNU binutils); otherwise it prints why and checks nothing.

use std::collections::HashMap;
use std::process::Command;

/// The binary's disassembly, one `(function, instructions)` per function; `None` (with the
/// reason printed) where it cannot be had.
fn disassembly() -> Option<Vec<(String, Vec<String>)>> {
    if !cfg!(target_arch = "x86_64") {
        println!("skipped: the kernels checked here are x86-64's");
        return None;
    }
    if cfg!(debug_assertions) {
        println!("skipped: an unoptimized build inlines no intrinsic (run with --release)");
        return None;
    }
    let out = match Command::new("objdump")
        .args(["-d", "-C", "--no-show-raw-insn", env!("CARGO_BIN_EXE_ge")])
        .output()
    {
        Ok(o) if o.status.success() => o,
        Ok(o) => {
            println!(
                "skipped: objdump failed: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            return None;
        }
        Err(e) => {
            println!("skipped: objdump (GNU binutils) not available: {e}");
            return None;
        }
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let mut fns: Vec<(String, Vec<String>)> = Vec::new();
    for line in text.lines() {
        if let Some(name) = line
            .strip_suffix(">:")
            .and_then(|l| l.split_once(" <"))
            .map(|(_, n)| n)
        {
            fns.push((name.to_string(), Vec::new()));
        } else if let (Some((_, insns)), Some((_, ins))) = (fns.last_mut(), line.split_once(":\t"))
        {
            insns.push(ins.trim().to_string());
        }
    }
    Some(fns)
}

#[test]
fn no_intrinsic_is_called_out_of_line() {
    let Some(fns) = disassembly() else { return };
    let mut calls: HashMap<String, Vec<String>> = HashMap::new();
    for (name, insns) in &fns {
        for ins in insns {
            let is_branch = ins.starts_with("call") || ins.starts_with("jmp");
            // `std_detect` reads XCR0 through `_xgetbv` once, at feature detection.
            if is_branch && ins.contains("core_arch::") && !ins.contains("_xgetbv") {
                let target = ins.rsplit('<').next().unwrap_or(ins).to_string();
                calls.entry(name.clone()).or_default().push(target);
            }
        }
    }
    assert!(
        calls.is_empty(),
        "intrinsics called out of line (enable their target feature on the caller, or \
         keep them out of closures that LLVM may compile apart):\n{calls:#?}"
    );
}

/// The register tiles: the blocked conv's and the GEMM's, AVX-512 and AVX2.
const TILES: [&str; 5] = [
    "ge_sim::arch::x86::avx512::blocked_conv::kernel",
    "ge_sim::arch::x86::avx512::gemm::shaped",
    "ge_sim::arch::x86::avx2::blocked_conv::kernel",
    "ge_sim::arch::x86::avx2::gemm::tile",
    "ge_sim::arch::x86::avx2::gemm::conv_tile",
];

#[test]
fn register_tiles_keep_their_accumulators_in_registers() {
    let Some(fns) = disassembly() else { return };
    let tiles: Vec<&(String, Vec<String>)> = fns
        .iter()
        .filter(|(n, _)| TILES.iter().any(|t| n.starts_with(t)))
        .collect();
    for t in TILES {
        assert!(
            tiles.iter().any(|(n, _)| n.starts_with(t)),
            "{t} not found in the binary: has the kernel been renamed?"
        );
    }
    let mut spilling = Vec::new();
    for (name, insns) in tiles {
        // An FMA into a vector register directly followed by a store of it to the stack.
        let stored = insns
            .windows(2)
            .filter(|w| {
                let dst = w[0]
                    .starts_with("vfmadd")
                    .then(|| w[0].rsplit(',').next().unwrap_or(""))
                    .filter(|d| d.starts_with("%zmm") || d.starts_with("%ymm"));
                dst.is_some_and(|d| {
                    w[1].starts_with("vmov")
                        && w[1].contains(&format!("{d},"))
                        && w[1].contains("(%rsp)")
                })
            })
            .count();
        if stored > 4 {
            spilling.push(format!("{name}: {stored} FMAs stored to the stack"));
        }
    }
    assert!(
        spilling.is_empty(),
        "register tiles whose accumulators live on the stack:\n{}",
        spilling.join("\n")
    );
}
