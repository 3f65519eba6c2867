//! Shared mode's satellite side (`shared = true`, the default;
//! docs/notes/gateway-sharing.md): the gateway, not the connection, decides when to
//! send ([`crate::middlebox::gateway::Gateway`] paces one satellite budget over all
//! connections); a connection only says whether it has something to send and sends one
//! segment when asked ([`Conn::send_one`]). Its in-flight bytes (`pipe`: sent, not
//! acknowledged, not SACKed, not known lost) count against its fair share. A loss is
//! inferred from the client's ACKs: the `dupthresh`-th duplicate ACK, a partial ACK
//! during recovery, SACK blocks, or a resend that should have been acknowledged by now
//! (one smoothed RTT and a quarter); only the segments shown lost are resent — the
//! hole, the SACK holes below the highest SACKed byte, and what lies beyond the
//! client's window (a receiver drops out-of-order data beyond its window). They go
//! lowest first, so the hole's resend reaches the client before the others, which
//! then arrive in order (the satellite does not reorder). After a retransmission
//! timeout everything in flight is presumed lost and sent again one segment at a time
//! until the client answers. This is the scoreboard; the spoofed windows' share of the
//! memory is in [`Conn::free_window`].

use super::{Conn, GatewayConfig, GatewayCounters, GwPacket, Held, MemShare};
use crate::net::packet::FIN;
use crate::time::{SimDuration, SimTime};

impl<P: GwPacket> Conn<P> {
    /// Shared mode: something to send and room under `limit` bytes in flight.
    pub fn wants_send(&self, limit: u64) -> bool {
        let room = if self.rto_probe {
            self.pipe == 0
        } else {
            self.pipe < limit
        };
        room && self.next_to_send().is_some()
    }

    /// The segment to send next: the lowest one known lost, else new data (while the
    /// client's window is shut, only the head).
    fn next_to_send(&self) -> Option<u64> {
        if let Some(&s) = self.lost.first() {
            return (!self.shut() || Some(s) == self.first_held()).then_some(s);
        }
        if self.rto_probe || self.shut() {
            return None;
        }
        self.held.range(self.snd_nxt..).next().map(|(&s, _)| s)
    }

    /// Everything in flight is presumed lost (a timeout, or a window that was shut).
    pub(super) fn presume_lost(&mut self) {
        let inflight: Vec<u64> = self
            .held
            .range(..self.snd_nxt)
            .filter(|(_, h)| h.in_pipe)
            .map(|(&q, _)| q)
            .collect();
        for q in inflight {
            self.mark_lost(q);
        }
    }

    /// Shared mode: a segment from the client. SACK blocks mark what it holds; a new
    /// cumulative ACK releases data; the loss of the segment at the hole is inferred
    /// from the `dupthresh`-th duplicate ACK, from a partial ACK in recovery, or from
    /// a resend that is overdue.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn on_client_segment_shared(
        &mut self,
        cfg: &GatewayConfig,
        mem: MemShare,
        st: &mut GatewayCounters,
        now: SimTime,
        pkt: P,
        data: bool,
        out: &mut Vec<P>,
    ) -> Option<P> {
        let Some(space) = self.server.space else {
            out.push(pkt);
            return None;
        };
        let seg = &pkt.hdr().seg;
        let ack = space.to_rel(seg.ack, self.client_una);
        let is_fin = seg.flags & FIN != 0;
        if !is_fin {
            self.client_wnd = (seg.window as u64) << self.client_shift();
        }
        self.rto_probe = false; // the client answers
        if self.sack_ok {
            if let Some(sack) = seg.opts.sack.as_deref() {
                for &(l, r) in &sack.blocks[..sack.n.min(4) as usize] {
                    let (l, r) = (space.to_rel(l, ack), space.to_rel(r, ack));
                    self.mark_sacked(l, r);
                }
            }
        }
        let advanced = ack > self.client_una;
        if advanced {
            self.release(st, now, ack);
            if self.in_recovery {
                if self.client_una >= self.recover {
                    self.in_recovery = false;
                } else {
                    // a partial ACK: the client's next hole was lost too
                    self.mark_hole(now, false);
                }
            }
        } else if ack == self.client_una && self.client_una < self.snd_nxt && !is_fin && !data {
            if self.in_recovery {
                self.check_overdue_resend(now);
            } else {
                self.dupacks += 1;
                if self.dupacks >= cfg.dupthresh || self.sacked_beyond(cfg) {
                    st.go_back_n += 1;
                    self.in_recovery = true;
                    self.recover = self.snd_nxt;
                    self.mark_hole(now, true);
                }
            }
        }
        let mut pkt = Some(pkt);
        if is_fin {
            self.client_fin = true;
            if !self.pass_fin_ack(ack, &mut pkt, out) {
                let p = self.rescale(pkt.take().expect("not passed"));
                out.push(p);
            }
            return None;
        }
        if advanced {
            // Back-pressure release: a window update once at least two segments' worth
            // more can be promised than at the last advertisement.
            if self.free_window(cfg, mem) >= self.adv_wnd + 2 * self.mss {
                out.push(self.spoof_ack(cfg, mem));
            }
        }
        // the client's ACK of the FIN: the server may close
        self.pass_fin_ack(ack, &mut pkt, out);
        pkt
    }

    /// SACK blocks show `dupthresh` segments held above the hole (RFC 6675's rule).
    pub(super) fn sacked_beyond(&self, cfg: &GatewayConfig) -> bool {
        self.sack_ok
            && self
                .held
                .range(self.client_una..self.snd_nxt)
                .filter(|(_, h)| h.sacked)
                .count()
                >= cfg.dupthresh as usize
    }

    pub(super) fn mark_sacked(&mut self, l: u64, r: u64) {
        if l >= r || r > self.snd_nxt {
            return; // not a block of data the gateway sent
        }
        for (&s, h) in self.held.range_mut(l..r) {
            if s + h.seq_len > r || h.sacked {
                continue;
            }
            h.sacked = true;
            if h.in_pipe {
                h.in_pipe = false;
                self.pipe -= h.pkt.hdr().seg.len as u64;
            }
            self.lost.remove(&s);
        }
    }

    pub(super) fn mark_lost(&mut self, s: u64) {
        let Some(h) = self.held.get_mut(&s) else {
            return;
        };
        if h.sacked || h.sent_at.is_none() {
            return;
        }
        if h.in_pipe {
            h.in_pipe = false;
            self.pipe -= h.pkt.hdr().seg.len as u64;
        }
        self.lost.insert(s);
    }

    /// The segment at the client's hole is lost (or, `first` = at the start of
    /// recovery, shown lost by duplicate ACKs). What else the client cannot hold is lost
    /// with it: SACK holes below the highest SACKed segment, and every segment sent
    /// beyond the client's window from the hole (a receiver drops out-of-order data
    /// beyond its window, and all of them reach it before the resent hole).
    pub(super) fn mark_hole(&mut self, now: SimTime, first: bool) {
        let una = self.client_una;
        // the first segment the client lacks (its ACK may end inside it)
        let Some((&s, h)) = self.held.iter().next() else {
            return;
        };
        // a partial ACK that reaches a segment resent in this recovery, still on its
        // way, shows nothing new
        if !first && h.retx && h.in_pipe && !self.overdue(now, h) {
            return;
        }
        self.mark_lost(s);
        let mut sack_top = una;
        if self.sack_ok {
            if let Some((&t, h)) = self.held.range(s..).rev().find(|(_, h)| h.sacked) {
                sack_top = t + h.seq_len;
            }
        }
        let beyond = una.saturating_add(self.client_wnd);
        let lost: Vec<u64> = self
            .held
            .range(s..self.snd_nxt)
            .filter(|&(&q, h)| h.in_pipe && (q < sack_top || q >= beyond))
            .map(|(&q, _)| q)
            .collect();
        for q in lost {
            self.mark_lost(q);
        }
    }

    /// A resent segment that should have been acknowledged by now (no reordering on
    /// the satellite: an ACK of anything sent after it shows it lost).
    pub(super) fn overdue(&self, now: SimTime, h: &Held<P>) -> bool {
        let srtt = self.rtt.srtt.unwrap_or(self.rtt.rto());
        h.sent_at
            .is_some_and(|t| now > t + srtt + SimDuration(srtt.0 / 4))
    }

    pub(super) fn check_overdue_resend(&mut self, now: SimTime) {
        if let Some((_, h)) = self.held.iter().next() {
            if h.in_pipe && h.retx && self.overdue(now, h) {
                self.mark_hole(now, true);
            }
        }
    }

    /// Shared mode: send one segment (a lost one first, else new data); its size on
    /// the wire, for the gateway's pacing.
    pub fn send_one(
        &mut self,
        st: &mut GatewayCounters,
        now: SimTime,
        out: &mut Vec<P>,
    ) -> Option<u32> {
        let seq = self.next_to_send()?;
        if !self.lost.remove(&seq) {
            self.snd_nxt = seq + self.held[&seq].seq_len;
        }
        let p = self.transmit(seq, st, now);
        let h = self.held.get_mut(&seq).expect("a held segment");
        h.in_pipe = true;
        self.pipe += p.hdr().seg.len as u64;
        let size = p.hdr().size;
        out.push(p);
        Some(size)
    }
}
