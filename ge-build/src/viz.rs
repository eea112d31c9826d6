//! Graph pictures for `ge viz`: Graphviz DOT text, or a self-contained SVG laid out by
//! longest-path layers (no external tools). Fused nodes are labelled with what they contain.
//! O(V + E) layout.

use std::collections::HashMap;
use std::fmt::Write;

use petgraph::Direction;
use petgraph::stable_graph::NodeIndex;
use petgraph::visit::{EdgeRef, IntoEdgeReferences};

use crate::ir::Graph;

fn label(g: &Graph, n: NodeIndex) -> (String, String) {
    let node = &g.g[n];
    let shape = node
        .outputs
        .first()
        .map(|&v| format!("{:?}", g.value(v).shape))
        .unwrap_or_default();
    (node.op_type.clone(), format!("{} {shape}", node.name))
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Graphviz DOT of the graph.
pub fn to_dot(g: &Graph) -> String {
    let mut s = String::from(
        "digraph ge {\n  rankdir=TB;\n  node [shape=box, style=rounded, fontname=\"monospace\"];\n",
    );
    for n in g.topo_order() {
        let (op, detail) = label(g, n);
        let _ = writeln!(
            s,
            "  n{} [label=\"{}\\n{}\"];",
            n.index(),
            op.replace('"', "'"),
            detail.replace('"', "'")
        );
    }
    for e in g.g.edge_references() {
        let _ = writeln!(s, "  n{} -> n{};", e.source().index(), e.target().index());
    }
    s.push_str("}\n");
    s
}

/// A standalone SVG of the graph.
pub fn to_svg(g: &Graph) -> String {
    let order = g.topo_order();
    let mut layer: HashMap<NodeIndex, usize> = HashMap::new();
    for &n in &order {
        let l =
            g.g.edges_directed(n, Direction::Incoming)
                .filter_map(|e| layer.get(&e.source()))
                .map(|l| l + 1)
                .max()
                .unwrap_or(0);
        layer.insert(n, l);
    }
    let mut column: HashMap<NodeIndex, usize> = HashMap::new();
    let mut width_of: HashMap<usize, usize> = HashMap::new();
    for &n in &order {
        let w = width_of.entry(layer[&n]).or_default();
        column.insert(n, *w);
        *w += 1;
    }
    let (bw, bh, gx, gy) = (220usize, 44usize, 30usize, 36usize);
    let cols = width_of.values().copied().max().unwrap_or(1);
    let rows = width_of.len().max(1);
    let (w, h) = (cols * (bw + gx) + gx, rows * (bh + gy) + gy);
    let pos = |n: NodeIndex| (gx + column[&n] * (bw + gx), gy + layer[&n] * (bh + gy));
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"monospace\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    );
    for e in g.g.edge_references() {
        let ((x1, y1), (x2, y2)) = (pos(e.source()), pos(e.target()));
        let _ = writeln!(
            s,
            "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#888\"/>",
            x1 + bw / 2,
            y1 + bh,
            x2 + bw / 2,
            y2
        );
    }
    for &n in &order {
        let (x, y) = pos(n);
        let (op, detail) = label(g, n);
        let fused = op.contains('+') || op.starts_with("Fused");
        let fill = if fused { "#ffe9b3" } else { "#dbe9ff" };
        let _ = writeln!(
            s,
            "<g><title>{}</title><rect x=\"{x}\" y=\"{y}\" width=\"{bw}\" height=\"{bh}\" rx=\"6\" fill=\"{fill}\" stroke=\"#333\"/><text x=\"{}\" y=\"{}\" font-weight=\"bold\">{}</text><text x=\"{}\" y=\"{}\">{}</text></g>",
            escape(&format!("{op}\n{detail}")),
            x + 6,
            y + 17,
            escape(&truncate(&op, 30)),
            x + 6,
            y + 34,
            escape(&truncate(&detail, 30))
        );
    }
    s.push_str("</svg>\n");
    s
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        s.chars().take(n - 1).chain(['…']).collect()
    }
}
