//! Models the unit tests build by hand: one way to write an edge and a halo loop, so the
//! tests of each analysis read the same shapes.

use crate::normal::Normal;
use crate::smm::{Edge, EdgeKey, RankModel, Times};
use std::collections::BTreeMap;

pub fn key(from: &str, to: &str) -> EdgeKey {
    EdgeKey {
        from: Some(from.into()),
        to: to.into(),
    }
}

/// A transition made 100 times with `probability`, 100 us in the call it leaves and
/// `between_s` seconds of computation (10% spread) before the next.
pub fn edge(probability: f64, between_s: f64) -> Edge {
    Edge {
        count: 100,
        probability,
        times: Times {
            within: Some(Normal {
                mean: 1e-4,
                sd: 1e-5,
            }),
            between: Some(Normal {
                mean: between_s,
                sd: between_s / 10.0,
            }),
        },
    }
}

/// A halo loop: Irecv -> Isend -> Waitall -> Irecv, with `compute` seconds between the
/// waitall and the next receive.
pub fn halo(rank: u32, compute: f64) -> RankModel {
    let mut edges = BTreeMap::new();
    edges.insert(key("Irecv", "Isend"), edge(1.0, 1e-6));
    edges.insert(key("Isend", "Waitall"), edge(1.0, 1e-6));
    edges.insert(key("Waitall", "Irecv"), edge(1.0, compute));
    RankModel { rank, edges }
}
