//! Removes ops that do not change their input: Identity, Dropout, same-shape Reshape, Cast to
//! the same dtype, Unary Identity; and collapses Reshape chains (a reshape of a reshape reads
//! the original). One pass in topological order: O(V + E).

use ge_runtime::format::UnaryOp;

use super::{Pass, PassContext};
use crate::error::Result;
use crate::ir::{Graph, Op};

/// Identity, Dropout, no-op Cast and Reshape-chain removal.
pub struct RemoveIdentities;

impl Pass for RemoveIdentities {
    pass_info!("remove_identities", O1);
    fn run(&self, g: &mut Graph, _: &PassContext<'_>) -> Result<bool> {
        let mut users = g.users();
        let mut changed = false;
        for n in g.topo_order() {
            let node = &g.g[n];
            let (Some(Some(x)), [y]) = (node.inputs.first().copied(), node.outputs.as_slice())
            else {
                continue;
            };
            let y = *y;
            let (xv, yv) = (g.value(x), g.value(y));
            let same = xv.dtype == yv.dtype && xv.shape == yv.shape;
            let removable = match node.op {
                Op::Reshape | Op::Cast => same,
                Op::Unary(p) => p.act.unary_op() == Some(UnaryOp::Identity) && same,
                _ => false,
            };
            if removable {
                let u = users.remove(&y).unwrap_or_default();
                g.replace_uses(y, x, &u);
                users.entry(x).or_default().extend(u);
                g.remove_node(n);
                changed = true;
                continue;
            }
            if matches!(node.op, Op::Reshape)
                && let Some(p) = xv.producer
                && matches!(g.g[p].op, Op::Reshape)
                && let Some(Some(src)) = g.g[p].inputs.first().copied()
            {
                g.rewire_input(n, x, src);
                users.entry(src).or_default().push(n);
                if let Some(list) = users.get_mut(&x) {
                    list.retain(|&m| m != n);
                }
                changed = true;
            }
        }
        Ok(changed)
    }
}
