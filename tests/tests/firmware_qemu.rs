//! The microcontroller firmware examples built for their targets and run under QEMU:
//! - `examples/firmware-cortex-m` (`thumbv7em-none-eabihf`: cortex-m-rt, semihosting, arena
//!   in `.bss`, blob read in place from flash) on the MPS2-AN386 (Cortex-M4F) and MPS2-AN500
//!   (Cortex-M7) boards: every digits held-out image and every MLPerf Tiny keyword-spotting
//!   input (int8 and float);
//! - `examples/firmware-riscv` (`riscv32imac-unknown-none-elf`: riscv-rt, soft float) on the
//!   `virt` board: every digits image.
//!
//! Every class must be the reference's (TFLite Micro's for kws_int8, compiled with
//! `int8_rounding = tflite`; onnxruntime's for the others). Prints flash, RAM, stack and instructions per inference
//! (QEMU `-icount shift=0`; SysTick calibrated on Cortex-M, `minstret` on RISC-V) per model,
//! and holds them to the figures measured (regression guards; issue 50 wants kws_int8's far
//! lower). Each part skips (in one line) when its Rust target or QEMU is not installed:
//! `tools/mcu_setup.sh` installs them.

use ge_tests::elf::{section_size, symbols};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One firmware example: its folder, target, QEMU, the boards it runs on and its binaries.
struct Firmware {
    example: &'static str,
    target: &'static str,
    qemu: &'static str,
    /// Arguments choosing each board (machine, CPU, BIOS).
    boards: &'static [&'static [&'static str]],
    /// (binary, most flash, most RAM incl. stack, most instructions per inference).
    limits: &'static [(&'static str, u64, u64, u64)],
}

/// Limits: the figures measured when the examples landed (session 34) plus about 3% for
/// toolchain drift; flash excludes the embedded test inputs. Cortex-M: digits 86,968 B /
/// 17,896 B / 417,160; kws_int8 302,358 / 137,692 / 34.6 M (session 35, after the int8
/// memory work: 221,126 / 27,036 / 33.6 M; session 36, in TFLite Micro's arithmetic, its float
/// softmax tail and dense layer gone: 108,266 / 22,052 / 32.1 M; session 37, its stem on quad
/// weights without im2col, the quad code beside the GEMM path the pointwise convs keep:
/// 113,518 / 22,416 / 31.1 M, under issue 50's bound of 1.1 × (64 KiB + its 38,720 B blob) =
/// 114,682 B, which is this limit); kws_f32 177,064 / 199,656 / 40.4 M. RISC-V digits (soft float): 104,332 / 17,712 / 1.81 M (the most over the
/// images: soft-float time depends on the values).
const CORTEX_M: Firmware = Firmware {
    example: "firmware-cortex-m",
    target: "thumbv7em-none-eabihf",
    qemu: "qemu-system-arm",
    boards: &[
        &["-M", "mps2-an386", "-cpu", "cortex-m4"],
        &["-M", "mps2-an500", "-cpu", "cortex-m7"],
    ],
    limits: &[
        ("digits", 90_000, 19_000, 440_000),
        ("kws_int8", 114_682, 23_100, 32_100_000),
        ("kws_f32", 183_000, 206_000, 42_000_000),
    ],
};

const RISCV: Firmware = Firmware {
    example: "firmware-riscv",
    target: "riscv32imac-unknown-none-elf",
    qemu: "qemu-system-riscv32",
    boards: &[&["-M", "virt", "-bios", "none"]],
    limits: &[("digits", 108_000, 18_300, 1_860_000)],
};

fn workspace() -> PathBuf {
    ge_tests::workspace_root()
}

fn installed(cmd: &str) -> bool {
    Command::new(cmd)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn target_installed(target: &str) -> bool {
    let out = Command::new("rustc").args(["--print", "sysroot"]).output();
    out.is_ok_and(|o| {
        let sysroot = String::from_utf8_lossy(&o.stdout).trim().to_string();
        Path::new(&sysroot)
            .join("lib/rustlib")
            .join(target)
            .is_dir()
    })
}

/// Runs `exe` on a board with a deadline; returns its semihosting output.
fn qemu(qemu: &str, board: &[&str], exe: &Path) -> String {
    let machine = board.join(" ");
    let mut child = Command::new(qemu)
        .args(board)
        .args(["-nographic", "-icount", "shift=0"])
        .args(["-semihosting-config", "enable=on,target=native", "-kernel"])
        .arg(exe)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("start {qemu}: {e}"));
    let deadline = Instant::now() + Duration::from_secs(300);
    while child.try_wait().expect("poll qemu").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{} on {machine} ran over 300 s", exe.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().expect("qemu output");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{} on {machine} failed ({}):\n{text}{}",
        exe.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// The classes the reference gives each input of `bin`: TFLite Micro's for kws_int8 (its
/// firmware compiles with `int8_rounding = tflite`; on the corpus inputs they are
/// onnxruntime's too, which is checked), onnxruntime's for the others.
fn expected(bin: &str) -> Vec<usize> {
    if bin == "kws_int8" {
        let tflm = classes(bin, "tflm");
        assert_eq!(
            tflm,
            classes(bin, "ort"),
            "TFLM's and onnxruntime's kws classes"
        );
        return tflm;
    }
    classes(bin, "ort")
}

/// The argmax of each `<reference>_sNN.npy` output of `bin` (`digits`: onnxruntime's
/// predictions file).
fn classes(bin: &str, reference: &str) -> Vec<usize> {
    if bin == "digits" {
        let pred = std::fs::read(workspace().join("examples/digits/data/ort_pred.bin")).unwrap();
        return pred.into_iter().map(usize::from).collect();
    }
    let dir = workspace()
        .join("../shared/corpus/mlperf-tiny/data")
        .join(bin);
    (0..)
        .map(|i| dir.join(format!("{reference}_s{i:02}.npy")))
        .take_while(|p| p.is_file())
        .map(|p| {
            let v = ge_build::tensor::read_tensor_file(&p).unwrap().to_f64_vec();
            ge_build::accuracy::argmax(&v.unwrap())
        })
        .collect()
}

/// One `<bin> sample <i> class <c> instructions <n> stack <bytes>` line per input.
fn results(out: &str, bin: &str) -> Vec<(usize, u64, u64)> {
    out.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 9 && f[0] == bin && f[1] == "sample").then(|| {
                let n = |i: usize| f[i].parse::<u64>().unwrap();
                (n(4) as usize, n(6), n(8))
            })
        })
        .collect()
}

#[test]
fn cortex_m_firmware_classifies_like_onnxruntime_under_qemu() {
    check(&CORTEX_M);
}

#[test]
fn riscv_firmware_classifies_like_onnxruntime_under_qemu() {
    check(&RISCV);
}

/// Builds `fw`, runs each binary on each board, checks the classes and the footprint.
fn check(fw: &Firmware) {
    if !target_installed(fw.target) || !installed(fw.qemu) {
        eprintln!(
            "skipped: needs `rustup target add {}` and {} (tools/mcu_setup.sh)",
            fw.target, fw.qemu
        );
        return;
    }
    let dir = workspace().join("examples").join(fw.example);
    // One build tree for both examples: the compiler `ge_model!` runs (ge-build, built
    // for the host at the examples' opt-level) is built once; cargo's lock on the tree
    // serializes the two tests' builds.
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR is <target>/tmp")
        .join("firmware-mcu");
    // Run from the example's folder: cargo reads `.cargo/config.toml` (target, linker
    // script) from the working directory, not the manifest's.
    let out = Command::new(env!("CARGO"))
        .current_dir(&dir)
        .args(["build", "--release", "--manifest-path"])
        .arg(dir.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .expect("run cargo");
    assert!(
        out.status.success(),
        "building {} failed:\n{}",
        fw.example,
        String::from_utf8_lossy(&out.stderr)
    );
    let mut failures = Vec::new();
    for &(bin, max_flash, max_ram, max_insns) in fw.limits {
        let exe = target.join(fw.target).join("release").join(bin);
        let want = expected(bin);
        assert!(!want.is_empty(), "no onnxruntime outputs for {bin}");
        let mut insns = 0;
        let mut stack = 0;
        for board in fw.boards {
            let machine = board.join(" ");
            let got = results(&qemu(fw.qemu, board, &exe), bin);
            assert_eq!(
                got.len(),
                want.len(),
                "{bin} on {machine}: one line per input"
            );
            for (i, (&(class, n, s), &w)) in got.iter().zip(&want).enumerate() {
                if class != w {
                    failures.push(format!(
                        "{bin} on {machine}: input {i} class {class}, onnxruntime {w}"
                    ));
                }
                insns = insns.max(n);
                stack = stack.max(s);
            }
        }
        let elf = std::fs::read(&exe).unwrap();
        let inputs = symbols(&elf)
            .into_iter()
            .filter(|(name, _)| name.contains("INPUTS"))
            .map(|(_, size)| size)
            .max()
            .unwrap_or(0);
        let (text, rodata) = (section_size(&elf, ".text"), section_size(&elf, ".rodata"));
        let (data, bss) = (section_size(&elf, ".data"), section_size(&elf, ".bss"));
        // The embedded test inputs are the test's, not the application's.
        let flash = text + rodata + data - inputs.min(rodata);
        let ram = bss + data + stack;
        println!(
            "{} {bin}: flash {flash} B (.text {text}, .rodata {rodata} incl. {inputs} B of test \
             inputs, .data {data}), RAM {ram} B (.bss {bss}, .data {data}, stack {stack}), \
             {insns} instructions per inference",
            fw.target
        );
        // Issue 50's bound on the microcontroller: at most 64 KiB of code (Cortex-M4F).
        if fw.target.starts_with("thumbv7em") && text > 64 * 1024 {
            failures.push(format!("{bin}: .text {text} over 65536 (64 KiB)"));
        }
        for (what, v, limit) in [
            ("flash", flash, max_flash),
            ("RAM", ram, max_ram),
            ("instructions", insns, max_insns),
        ] {
            if v > limit {
                failures.push(format!("{bin}: {what} {v} over {limit}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
