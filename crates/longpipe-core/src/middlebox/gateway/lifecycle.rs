//! Spoof mode's connection lifecycle at the table's level (issue 26): RSTs judged
//! (RFC 5961), handshakes that never completed forgotten, connections taken out of the
//! indexes and the shared sums, and — for a daemon — the listing of the table and the
//! resets at a stop.

use super::{
    handshake, spoof, ConnKey, Conns, Dir, FaultCounters, Gateway, GatewayConfig, GatewayCounters,
    GwPacket, Index, Part, Shared,
};
use crate::time::SimTime;
use std::collections::BTreeMap;

impl<P: GwPacket> Gateway<P> {
    /// Spoof mode: every connection (key, state), in key order (a listing; the daemon's
    /// record of what to reset if it dies).
    pub fn connections(&self) -> Vec<(ConnKey, spoof::ConnInfo)> {
        match &self.conns {
            Conns::Spoof(cs) => cs.iter().map(|(k, c)| (*k, c.info())).collect(),
            Conns::Split(_) => vec![],
        }
    }

    /// Spoof mode: the connections that cannot go on without the gateway
    /// ([`spoof::Conn::needs_gateway`]); a stopping daemon drains until there are none
    /// (or its deadline).
    pub fn needed(&self) -> usize {
        match &self.conns {
            Conns::Spoof(cs) => cs.values().filter(|c| c.needs_gateway()).count(),
            Conns::Split(_) => 0,
        }
    }

    /// Spoof mode, stopping: resets both sides of every connection that cannot go on
    /// without the gateway ([`spoof::Conn::needs_gateway`]) and forgets it; the rest
    /// continue end to end. Returns (connections reset, bytes the servers saw
    /// acknowledged that their clients never did).
    pub fn reset_all(&mut self, out: &mut Vec<P>) -> (u64, u64) {
        let st = &mut self.stats;
        let Conns::Spoof(cs) = &mut self.conns else {
            return (0, 0);
        };
        let doomed: Vec<ConnKey> = cs
            .iter()
            .filter(|(_, c)| c.needs_gateway())
            .map(|(k, _)| *k)
            .collect();
        let mut bytes = 0;
        for k in &doomed {
            let c = cs.remove(k).expect("present");
            c.rsts(out);
            bytes += c.unsent_acked_bytes();
            self.faults.fins_undelivered += c.fin_undelivered() as u64;
            Self::unlink(&mut self.idx, &mut self.shared, &mut self.hs, st, *k, &c);
        }
        self.faults.resets_sent += doomed.len() as u64;
        Self::refresh_eligible(&mut self.idx, self.shared.as_ref(), cs);
        (doomed.len() as u64, bytes)
    }

    /// Spoof mode: forgets the handshakes not completed within `half_open_timeout` (done
    /// on every packet; a daemon also calls it now and then while idle).
    pub fn housekeeping(&mut self, now: SimTime) {
        let st = &mut self.stats;
        if let Conns::Spoof(cs) = &mut self.conns {
            Self::expire_handshakes(
                cs,
                &mut self.idx,
                &mut self.shared,
                &mut self.hs,
                st,
                &self.cfg,
                now,
            );
            Self::refresh_eligible(&mut self.idx, self.shared.as_ref(), cs);
        }
    }

    pub(super) fn expire_handshakes(
        cs: &mut BTreeMap<ConnKey, spoof::Conn<P>>,
        idx: &mut Index,
        shared: &mut Option<Shared>,
        hs: &mut handshake::Handshakes,
        st: &mut GatewayCounters,
        cfg: &GatewayConfig,
        now: SimTime,
    ) {
        let timeout = cfg.half_open_timeout;
        hs.expire(now, timeout);
        while let Some(&(t, k)) = hs.embryos.front() {
            if t + timeout > now {
                break;
            }
            hs.embryos.pop_front();
            let gone = cs
                .get(&k)
                .is_some_and(|c| c.born() == t && c.half_open_expired(now, timeout));
            if gone {
                let c = cs.remove(&k).expect("present");
                Self::unlink(idx, shared, hs, st, k, &c);
                hs.stats.expired += 1;
            }
        }
    }

    /// Takes a spoofed connection (already out of the table) out of the indexes, the
    /// shared sums and the handshake counts; counted as closed.
    pub(super) fn unlink(
        idx: &mut Index,
        shared: &mut Option<Shared>,
        hs: &mut handshake::Handshakes,
        st: &mut GatewayCounters,
        k: ConnKey,
        c: &spoof::Conn<P>,
    ) {
        st.conns_closed += 1;
        idx.forget(k, c.armed);
        if let Some(sh) = shared {
            sh.account::<P>(Part::of(c), None);
        }
        if !c.established() {
            hs.embryo_gone(k);
        }
    }

    /// Spoof mode: a RST (RFC 5961 §3.2; [`spoof::Conn::rst_verdict`]).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn spoof_rst(
        cs: &mut BTreeMap<ConnKey, spoof::Conn<P>>,
        idx: &mut Index,
        shared: &mut Option<Shared>,
        hs: &mut handshake::Handshakes,
        faults: &mut FaultCounters,
        st: &mut GatewayCounters,
        cfg: &GatewayConfig,
        (k, dir): (ConnKey, Dir),
        pkt: P,
        out: &mut Vec<P>,
    ) {
        let Some(c) = cs.get_mut(&k) else {
            hs.rst(k, dir, pkt.hdr());
            out.push(pkt);
            return;
        };
        match c.rst_verdict(dir, pkt.hdr()) {
            spoof::RstVerdict::Accept => {
                faults.rst_accepted += 1;
                faults.reset_bytes += c.unsent_acked_bytes();
                faults.fins_undelivered += c.fin_undelivered() as u64;
                if dir == Dir::ToClient {
                    // at the byte the client expects, not the one the server sent next
                    out.push(c.rst_to_client());
                } else {
                    out.push(pkt);
                }
                let c = cs.remove(&k).expect("present");
                Self::unlink(idx, shared, hs, st, k, &c);
                Self::refresh_eligible(idx, shared.as_ref(), cs);
            }
            spoof::RstVerdict::Challenge => {
                faults.rst_challenged += 1;
                let n = cs.len();
                let mem = shared
                    .as_ref()
                    .map_or(spoof::MemShare::UNLIMITED, |sh| sh.mem(n));
                let c = cs.get_mut(&k).expect("present");
                out.push(c.challenge_ack(cfg, mem));
            }
            spoof::RstVerdict::Drop => faults.rst_dropped += 1,
            spoof::RstVerdict::Pass => {
                faults.rst_passed += 1;
                out.push(pkt);
            }
        }
    }
}
