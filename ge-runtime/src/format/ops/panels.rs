//! The pre-packed weight panel order ([`WeightLayout::Panels`](super::WeightLayout::Panels)): rows of the register tile.

/// Filters per weight panel of [`WeightLayout::Panels`](super::WeightLayout::Panels) (the register tile's rows).
pub const PANEL_ROWS: usize = 6;

/// Reorders a row-major `rows × k` matrix (one conv group's filters) into
/// [`WeightLayout::Panels`](super::WeightLayout::Panels) order: `dst[i·k + p·w + r] = src[(i + r)·k + p]` for each panel
/// starting at row `i` (a multiple of [`PANEL_ROWS`]) of `w = min(PANEL_ROWS, rows − i)`
/// rows. Both slices hold `rows·k` values (extra values are left alone). O(rows·k).
pub fn pack_panels<T: Copy>(src: &[T], rows: usize, k: usize, dst: &mut [T]) {
    for i in (0..rows).step_by(PANEL_ROWS) {
        let w = (rows - i).min(PANEL_ROWS);
        for r in 0..w {
            let row = &src[(i + r) * k..(i + r + 1) * k];
            for (p, &v) in row.iter().enumerate() {
                dst[i * k + p * w + r] = v;
            }
        }
    }
}
