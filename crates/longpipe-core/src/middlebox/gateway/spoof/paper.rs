//! The paper's satellite side (seed 003, §3; `shared = false`): per connection, send
//! from the buffer beyond the client's advertised window up to a satellite-side window,
//! optionally paced; on a timeout or the `dupthresh`-th duplicate ACK go back to the
//! first unacknowledged segment and resend everything from there, without slow start or
//! window reduction; after a go-back-N the next (client receive buffer ÷ MSS) ACKs are
//! not counted as duplicates (they answer data the client already held).

use super::{Conn, GatewayConfig, GatewayCounters, GwPacket, MemShare};
use crate::net::packet::{FIN, TCPIP_HEADER};
use crate::time::SimTime;

impl<P: GwPacket> Conn<P> {
    pub(super) fn on_client_segment(
        &mut self,
        cfg: &GatewayConfig,
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
        let (fin, window) = (seg.flags & FIN != 0, seg.window);
        let mut pkt = Some(pkt);
        if fin {
            // The client's FIN goes to the server; its ACK field still releases data.
            self.client_fin = true;
            if ack > self.client_una {
                self.release(st, now, ack);
            }
            if !self.pass_fin_ack(ack, &mut pkt, out) {
                let p = self.rescale(pkt.take().expect("not passed"));
                out.push(p);
            }
            return None;
        }
        self.client_wnd = (window as u64) << self.client_shift();
        if ack > self.client_una {
            self.release(st, now, ack);
            self.suppress = self.suppress.saturating_sub(1);
            // Back-pressure release: a window update to the server once at least two
            // segments' worth of buffer has freed since the last advertisement.
            let free = cfg.buffer.saturating_sub(self.held_bytes);
            if free >= self.adv_wnd + 2 * self.mss {
                out.push(self.spoof_ack(cfg, MemShare::UNLIMITED));
            }
            // the client's ACK of the FIN: the server may close
            self.pass_fin_ack(ack, &mut pkt, out);
            return pkt;
        }
        if self.pass_fin_ack(ack, &mut pkt, out) {
            return None;
        }
        if ack == self.client_una && self.client_una < self.snd_nxt && !data {
            if self.suppress > 0 {
                self.suppress -= 1; // an echo of data resent by go-back-N
                return pkt;
            }
            if cfg.recover_guard && self.client_una < self.recover {
                return pkt; // echoes of the window the last go-back-N resends
            }
            self.dupacks += 1;
            if self.dupacks == cfg.dupthresh {
                self.go_back_n(st, now);
            }
        }
        pkt
    }

    pub(super) fn go_back_n(&mut self, st: &mut GatewayCounters, now: SimTime) {
        st.go_back_n += 1;
        self.recover = self.recover.max(self.snd_nxt);
        // from the first segment the client lacks (its ACK may end inside one)
        self.snd_nxt = self
            .first_held()
            .unwrap_or(self.client_una)
            .min(self.client_una);
        self.dupacks = 0;
        self.suppress = self.client_wnd / self.mss.max(1);
        self.next_send_at = now;
    }

    /// Something to send within the connection's satellite window (while the client's
    /// window is shut, only the head: the first segment it lacks).
    pub(super) fn can_send(&self, window: u64) -> bool {
        self.held.range(self.snd_nxt..).next().is_some()
            && self.snd_nxt < self.client_una + window
            && (!self.shut() || Some(self.snd_nxt) == self.first_held())
    }

    /// The paper's mode: send what the connection's window allows.
    pub(super) fn send(
        &mut self,
        cfg: &GatewayConfig,
        window: u64,
        st: &mut GatewayCounters,
        now: SimTime,
        out: &mut Vec<P>,
    ) {
        while self.can_send(window) && self.next_send_at <= now {
            let (&seq, h) = self.held.range(self.snd_nxt..).next().expect("can_send");
            debug_assert_eq!(seq, self.snd_nxt);
            self.snd_nxt = seq + h.seq_len;
            let p = self.transmit(seq, st, now);
            let size = p.hdr().seg.len;
            out.push(p);
            if let Some(r) = cfg.pace {
                self.next_send_at = now + r.tx_time((size + TCPIP_HEADER) as u64);
            }
        }
    }
}
