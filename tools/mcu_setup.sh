#!/usr/bin/env bash
# Microcontroller targets on every CI run (issue 58), called by the README's test command:
#   1. installs the Rust targets thumbv7em-none-eabihf (Cortex-M4F/M7), thumbv6m-none-eabi
#      (Cortex-M0+) and riscv32imac-unknown-none-elf, and QEMU (Debian's qemu-system-arm and
#      qemu-system-misc; from bookworm-backports where the machine's qemu-utils comes from
#      there and blocks the stable packages);
#   2. runs clippy with -D warnings on ge, ge-runtime and ge-sim without default features
#      for each installed target: the firmware build must stay warning-free there.
# The firmware itself runs under QEMU in `cargo test` (tests/tests/firmware_qemu.rs), which
# skips in one line when the target or QEMU is missing. A target or package that cannot be
# installed is reported in one line and only its part is skipped; a clippy finding fails.
# GE_MCU_CI=0 skips all.
set -uo pipefail
cd "$(dirname "$0")/.."

if [ "${GE_MCU_CI:-1}" = "0" ]; then
    echo "mcu_setup: skipped (GE_MCU_CI=0)"
    exit 0
fi
targets="thumbv7em-none-eabihf thumbv6m-none-eabi riscv32imac-unknown-none-elf"
for t in $targets; do
    rustup target list --installed 2>/dev/null | grep -qx "$t" ||
        rustup target add "$t" >/dev/null 2>&1 ||
        echo "mcu_setup: cannot install the Rust target $t; its checks are skipped"
done

if ! command -v qemu-system-arm >/dev/null || ! command -v qemu-system-riscv32 >/dev/null; then
    apt_install() { DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -q "$@" >/dev/null 2>&1; }
    if ! apt_install qemu-system-arm qemu-system-misc; then
        # The machine's qemu-utils may come from bookworm-backports: take QEMU from there too.
        if [ -w /etc/apt/sources.list.d ] && grep -q bookworm /etc/os-release 2>/dev/null; then
            printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
                >/etc/apt/sources.list.d/ge-backports.sources
            timeout 300 apt-get update -q >/dev/null 2>&1
            apt_install -t bookworm-backports qemu-system-arm qemu-system-misc
        fi
    fi
    command -v qemu-system-arm >/dev/null ||
        echo "mcu_setup: cannot install qemu-system-arm; the firmware tests will skip their QEMU runs"
fi

status=0
for t in $targets; do
    rustup target list --installed 2>/dev/null | grep -qx "$t" || continue
    if ! cargo clippy -q --target "$t" -p ge -p ge-runtime -p ge-sim --no-default-features \
        -- -D warnings; then
        echo "mcu_setup: clippy found warnings for $t"
        status=1
    fi
done
exit $status
