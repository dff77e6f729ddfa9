//! The failure text for module cycles: every cycle with its modules, a shortest loop through
//! them, and one `file:line` per edge inside the cycle, so a developer knows what to cut.

use crate::cycles::Cycle;
use crate::graph::ModuleGraph;
use std::fmt::Write;

/// The report for one crate: empty when it has no cycles.
pub fn crate_cycles(crate_name: &str, graph: &ModuleGraph, cycles: &[Cycle]) -> String {
    let mut out = String::new();
    if cycles.is_empty() {
        return out;
    }
    let plural = if cycles.len() == 1 { "" } else { "s" };
    let _ = writeln!(
        out,
        "crate {crate_name}: {} module cycle{plural}",
        cycles.len()
    );
    for (number, cycle) in cycles.iter().enumerate() {
        write_cycle(&mut out, number + 1, graph, cycle);
    }
    out
}

fn write_cycle(out: &mut String, number: usize, graph: &ModuleGraph, cycle: &Cycle) {
    let name = |id: usize| graph.names[id].as_str();
    let example: Vec<&str> = cycle.example_loop.iter().map(|&id| name(id)).collect();
    let example = example.join(" -> ");
    // The loop visits each module once, plus the first again at the end.
    if cycle.example_loop.len() == cycle.modules.len() + 1 {
        let _ = writeln!(out, "  cycle {number}: {example}");
    } else {
        let members: Vec<&str> = cycle.modules.iter().map(|&id| name(id)).collect();
        let _ = writeln!(
            out,
            "  cycle {number}: {} modules {{{}}}, e.g. {example}",
            cycle.modules.len(),
            members.join(", ")
        );
    }
    for (&(from, to), example) in &graph.edges {
        if cycle.modules.contains(&from) && cycle.modules.contains(&to) {
            let _ = writeln!(
                out,
                "    {} -> {}: {}:{} names {}",
                name(from),
                name(to),
                example.file,
                example.line,
                example.item
            );
        }
    }
}
