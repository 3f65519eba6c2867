//! Cell discard policies of a switch output port (seed 002 §2.1; ALGORITHMS.md §4). The
//! buffer counts cells waiting (not the one in transmission); every decision is taken
//! when a cell arrives, from the occupancy it finds (nothing already queued is ever
//! pushed out), so a port's departures are known at admission.
//!
//! - `ubr`: tail drop — a cell that finds the buffer full is dropped.
//! - `epd` (Romanow & Floyd): when the *first* cell of a CPCS-PDU finds the occupancy at
//!   or above `epd_threshold`, that cell and the rest of its PDU, end-of-message cell
//!   included, are dropped. A PDU whose first cell was accepted is accepted on unless
//!   the buffer is truly full; then Partial Packet Discard drops its remaining cells but
//!   the end-of-message cell (which still needs room), so the receiver sees the boundary.
//! - `scd` (VBR with selective cell discard): tagged (CLP = 1) cells are dropped once
//!   the occupancy is at or above `scd_threshold`; untagged cells only when full.
//! - `scd-epd` (the seed's own combination): `scd`, plus EPD applied only to VCs whose
//!   last end-of-message cell was tagged (a VC over its contract); any cell dropped in
//!   the middle of a PDU starts PPD for the rest of it.

use super::cell::{Cell, VcId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The scenario's `policy` of an `atm-switch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// UBR, tail drop of cells.
    #[default]
    Ubr,
    /// UBR with Early Packet Discard (and Partial Packet Discard when full).
    Epd,
    /// VBR with tagging at the input lines' UPC and Selective Cell Discard.
    Scd,
    /// SCD, plus EPD for VCs whose last end-of-message cell was tagged.
    ScdEpd,
}

impl Policy {
    pub fn name(self) -> &'static str {
        match self {
            Policy::Ubr => "ubr",
            Policy::Epd => "epd",
            Policy::Scd => "scd",
            Policy::ScdEpd => "scd-epd",
        }
    }

    /// Whether the policy looks at CLP (and so the input lines' UPC tags cells).
    pub fn uses_clp(self) -> bool {
        matches!(self, Policy::Scd | Policy::ScdEpd)
    }
}

/// A port's policy and its limits, in cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortLimits {
    pub policy: Policy,
    pub buffer: u64,
    pub epd_threshold: u64,
    pub scd_threshold: u64,
}

/// Why a cell was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drop {
    /// The buffer was full.
    Full,
    /// A tagged cell above the SCD threshold.
    Tagged,
    /// Early Packet Discard: the first cell of a PDU discarded whole ...
    EpdStart,
    /// ... and its later cells.
    Epd,
    /// Partial Packet Discard (the rest of a PDU that lost a cell).
    Ppd,
}

/// Where a VC stands in its current PDU at this port.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum State {
    /// The next cell is the first of a PDU.
    #[default]
    Idle,
    /// The PDU's cells so far were accepted.
    Accepting,
    /// EPD: the whole PDU is being dropped.
    Discarding,
    /// PPD: a cell of the PDU was dropped; drop the rest but its end-of-message cell.
    Partial,
}

#[derive(Debug, Clone, Copy, Default)]
struct VcState {
    st: State,
    last_eom_tagged: bool,
}

/// The discard decisions of one output port.
#[derive(Debug, Clone)]
pub struct Discard {
    pub limits: PortLimits,
    vcs: Vec<VcState>,
}

impl Discard {
    pub fn new(limits: PortLimits) -> Self {
        Discard {
            limits,
            vcs: Vec::new(),
        }
    }

    /// Decides a cell that finds `waiting` cells in the buffer: `Ok` to accept it.
    pub fn admit(&mut self, waiting: u64, cell: &Cell) -> Result<(), Drop> {
        let l = self.limits;
        let full = waiting >= l.buffer;
        match l.policy {
            Policy::Ubr => return if full { Err(Drop::Full) } else { Ok(()) },
            Policy::Scd => return scd(full, waiting, &l, cell),
            Policy::Epd | Policy::ScdEpd => {}
        }
        let v = self.vc(cell.vc);
        let verdict = match v.st {
            // the first cell of a PDU: EPD's decision (for scd-epd only on a VC whose
            // last end-of-message cell was tagged)
            State::Idle
                if waiting >= l.epd_threshold && (l.policy == Policy::Epd || v.last_eom_tagged) =>
            {
                v.st = State::Discarding;
                Err(Drop::EpdStart)
            }
            State::Idle | State::Accepting => accept_cell(v, full, waiting, &l, cell),
            State::Discarding => Err(Drop::Epd),
            State::Partial if cell.eom => scd(full, waiting, &l, cell),
            State::Partial => Err(Drop::Ppd),
        };
        if cell.eom {
            v.st = State::Idle;
            v.last_eom_tagged = cell.clp;
        }
        verdict
    }

    fn vc(&mut self, vc: VcId) -> &mut VcState {
        let i = vc as usize;
        if self.vcs.len() <= i {
            self.vcs.resize(i + 1, VcState::default());
        }
        &mut self.vcs[i]
    }
}

/// SCD's rule for one cell (also the rule for an end-of-message cell under PPD).
fn scd(full: bool, waiting: u64, l: &PortLimits, cell: &Cell) -> Result<(), Drop> {
    if full {
        Err(Drop::Full)
    } else if l.policy.uses_clp() && cell.clp && waiting >= l.scd_threshold {
        Err(Drop::Tagged)
    } else {
        Ok(())
    }
}

/// A cell of a PDU that is being accepted: SCD's rule; a drop before the PDU's end
/// starts PPD.
fn accept_cell(
    v: &mut VcState,
    full: bool,
    waiting: u64,
    l: &PortLimits,
    cell: &Cell,
) -> Result<(), Drop> {
    let r = scd(full, waiting, l, cell);
    v.st = if r.is_ok() {
        State::Accepting
    } else {
        State::Partial
    };
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(vc: VcId, pdu: u32, eom: bool, clp: bool) -> Cell {
        Cell {
            vc,
            dst: 0,
            pdu,
            ncells: 0,
            eom,
            clp,
            epoch: 0,
            epoch_start: 0,
            sdu: None,
        }
    }

    fn port(policy: Policy) -> Discard {
        Discard::new(PortLimits {
            policy,
            buffer: 10,
            epd_threshold: 5,
            scd_threshold: 8,
        })
    }

    /// Feeds (waiting, vc, eom, clp) and returns the verdicts.
    fn feed(d: &mut Discard, script: &[(u64, VcId, bool, bool)]) -> Vec<Result<(), Drop>> {
        script
            .iter()
            .map(|&(w, vc, eom, clp)| d.admit(w, &cell(vc, 0, eom, clp)))
            .collect()
    }

    const OK: Result<(), Drop> = Ok(());
    const FULL: Result<(), Drop> = Err(Drop::Full);
    const TAG: Result<(), Drop> = Err(Drop::Tagged);
    const EPD0: Result<(), Drop> = Err(Drop::EpdStart);
    const EPD: Result<(), Drop> = Err(Drop::Epd);
    const PPD: Result<(), Drop> = Err(Drop::Ppd);

    #[test]
    fn ubr_drops_only_when_full() {
        let mut d = port(Policy::Ubr);
        let v = feed(
            &mut d,
            &[
                (9, 1, false, true),
                (10, 1, false, false),
                (3, 1, true, false),
                (11, 2, true, false),
            ],
        );
        assert_eq!(v, [OK, FULL, OK, FULL], "no PPD, CLP ignored");
    }

    #[test]
    fn epd_discards_new_pdus_whole_above_the_threshold_then_ppd_when_full() {
        let mut d = port(Policy::Epd);
        let v = feed(
            &mut d,
            &[
                // PDU A starts below the threshold: all accepted even above it
                (4, 1, false, false),
                (6, 1, false, false),
                (9, 1, true, false),
                // PDU B starts at the threshold: discarded whole, EOM included, even
                // once the buffer has drained
                (5, 1, false, false),
                (2, 1, false, false),
                (0, 1, true, false),
                // PDU C: accepted, then the buffer is full: PPD drops the rest but the
                // EOM, which is accepted when there is room
                (3, 1, false, false),
                (10, 1, false, false),
                (4, 1, false, false),
                (4, 1, true, false),
                // PDU D: accepted; its EOM finds the buffer full and is lost; PDU E
                // then starts afresh
                (0, 1, false, false),
                (10, 1, true, false),
                (0, 1, false, false),
                (0, 1, true, false),
                // a one-cell PDU at the threshold
                (7, 1, true, false),
                (0, 1, true, false),
            ],
        );
        assert_eq!(
            v,
            [OK, OK, OK, EPD0, EPD, EPD, OK, FULL, PPD, OK, OK, FULL, OK, OK, EPD0, OK]
        );
    }

    #[test]
    fn epd_state_is_per_vc() {
        let mut d = port(Policy::Epd);
        let v = feed(
            &mut d,
            &[
                (4, 1, false, false), // VC 1 accepted
                (6, 2, false, false), // VC 2 discarded whole
                (7, 1, false, false), // VC 1 goes on
                (7, 2, false, false),
                (3, 2, true, false),
                (3, 1, true, false),
                (3, 2, false, false), // VC 2's next PDU below the threshold
            ],
        );
        assert_eq!(v, [OK, EPD0, OK, EPD, EPD, OK, OK]);
    }

    #[test]
    fn scd_drops_tagged_cells_above_its_threshold_without_ppd() {
        let mut d = port(Policy::Scd);
        let v = feed(
            &mut d,
            &[
                (7, 1, false, true),  // tagged, below 8
                (8, 1, false, true),  // tagged at 8: dropped
                (8, 1, false, false), // untagged: accepted (no PPD)
                (9, 1, true, false),
                (10, 1, false, false), // full
                (20, 1, false, true),
                (0, 1, true, true),
            ],
        );
        assert_eq!(v, [OK, TAG, OK, OK, FULL, FULL, OK]);
    }

    #[test]
    fn scd_epd_applies_epd_only_after_a_tagged_end_of_message() {
        let mut d = port(Policy::ScdEpd);
        let v = feed(
            &mut d,
            &[
                // VC 1 has never sent a tagged EOM: not an EPD target above 5
                (6, 1, false, false),
                (6, 1, true, true), // its EOM is tagged (6 < 8: accepted)
                // now VC 1 is a target: its next PDU above the threshold goes whole
                (6, 1, false, false),
                (1, 1, true, false), // EOM untagged: VC 1 is no longer a target
                (6, 1, false, false),
                // a tagged cell above the SCD threshold mid-PDU: dropped, then PPD
                (8, 1, false, true),
                (0, 1, false, false),
                (0, 1, true, false),
            ],
        );
        assert_eq!(v, [OK, OK, EPD0, EPD, OK, TAG, PPD, OK]);
        // SCD's rules apply to the first cell of a non-target VC too
        let mut d = port(Policy::ScdEpd);
        assert_eq!(
            feed(&mut d, &[(9, 3, false, true), (10, 3, false, false)]),
            [TAG, PPD]
        );
    }
}
