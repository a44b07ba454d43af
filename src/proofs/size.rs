//! How big each circuit is, for the memory budget: synthesizing a blank 32 GiB circuit just to
//! count it would take a minute, so the counts are measured once and kept here.
//!
//! Measured by synthesizing each blank circuit through a counting constraint system (the test
//! `circuit_sizes_match_table` re-measures the small ones). Constraints include bellperson's one
//! extra constraint per public input, and inputs include ONE.

use super::{CircuitSize, ProofKind};

pub(super) fn size(kind: ProofKind, sector_size: u64) -> CircuitSize {
    let (constraints, aux, inputs) = match (kind, sector_size) {
        (ProofKind::PorepC2, s) if s <= 512 << 20 => (2_687_921, 2_687_921, 1),
        (ProofKind::PorepC2, _) => (130_278_541, 130_278_541, 1),
        (ProofKind::SnapDeals, s) if s <= 512 << 20 => (1_705_039, 1_705_039, 1),
        (ProofKind::SnapDeals, _) => (81_049_499, 81_049_499, 1),
        (ProofKind::WindowPost, s) if s <= 512 << 20 => (21_866, 21_866, 1),
        (ProofKind::WindowPost, _) => (129_887_900, 129_887_900, 1),
        (ProofKind::WinningPost, s) if s <= 512 << 20 => (90_750, 90_750, 1),
        (ProofKind::WinningPost, _) => (370_590, 370_590, 1),
    };
    CircuitSize { constraints, aux, inputs }
}
