//! The server's side of a spoofed connection: what the gateway says in the client's
//! name — spoofed ACKs with the gateway's own window (its free buffer; in shared mode
//! its share of the memory), the client's segments rewritten to the gateway's window
//! scale and acknowledgement — and the server's data it takes: in order (held for the
//! client, the TSvals made monotonic along the sequence), or beyond a hole (kept within
//! the promised window, answered with SACK blocks).

use super::{newer, Conn, GatewayConfig, GatewayCounters, GwPacket, MemShare};
use crate::net::packet::{Packet, Segment, ACK, FIN, TCPIP_HEADER};
use crate::time::SimTime;
use crate::wire::SackBlocks;

impl<P: GwPacket> Conn<P> {
    /// A client segment passing to the server: its window in the server's view (its
    /// promise is recorded), SACK blocks removed if the server did not negotiate SACK.
    ///
    /// Its ACK field never goes below what the gateway has acknowledged in the client's
    /// name (a real server drops a segment whose ACK is more than a window old).
    pub(super) fn rescale(&mut self, mut pkt: P) -> P {
        let (cs, ss) = (self.client_shift(), self.server_view_shift());
        let (rcv_nxt, acked, strip) = (self.rcv_nxt, self.acked_to_server(), self.strip_sack);
        let space = self.server.space;
        let p = pkt.hdr_mut();
        p.seg.window = (((p.seg.window as u64) << cs) >> ss).min(65_535) as u16;
        let wire = p.seg.window as u64;
        if let Some(space) = space {
            let mut ack = space.to_rel(p.seg.ack, rcv_nxt);
            if p.seg.flags & ACK != 0 && ack < acked {
                ack = acked;
                p.seg.ack = space.to_wire(ack);
            }
            self.edge = self.edge.max(ack + (wire << ss));
        }
        if strip && p.seg.opts.sack.is_some() {
            p.seg.opts.sack = None;
            p.size = TCPIP_HEADER + p.seg.opts.encoded_len() + p.seg.len;
        }
        self.syn_acked |= p.seg.flags & ACK != 0;
        pkt
    }

    /// A data segment of the client passing to the server: the gateway speaks for the
    /// client's receive side, so its ACK and window are those of a spoofed ACK.
    pub(super) fn speak_for_client(&mut self, cfg: &GatewayConfig, mem: MemShare, mut pkt: P) -> P {
        let free = self.free_window(cfg, mem);
        self.adv_wnd = free;
        let shift = self.server_view_shift();
        let wire = (free >> shift).min(65_535);
        self.edge = self.edge.max(self.rcv_nxt + (wire << shift));
        let (strip, rcv_nxt, acked) = (self.strip_sack, self.rcv_nxt, self.acked_to_server());
        let space = self.server.space;
        let p = pkt.hdr_mut();
        if let Some(space) = space {
            let ack = space.to_rel(p.seg.ack, rcv_nxt).max(acked);
            p.seg.ack = space.to_wire(ack);
            p.seg.flags |= ACK;
        }
        p.seg.window = wire as u16;
        if strip && p.seg.opts.sack.is_some() {
            p.seg.opts.sack = None;
            p.size = TCPIP_HEADER + p.seg.opts.encoded_len() + p.seg.len;
        }
        self.syn_acked = true;
        pkt
    }

    /// The window to advertise to the server: the free per-connection buffer, and no
    /// more memory than this connection's fair share or what is free.
    pub fn free_window(&self, cfg: &GatewayConfig, mem: MemShare) -> u64 {
        if !cfg.shared {
            return cfg.buffer.saturating_sub(self.held_bytes);
        }
        let own = self.reserved();
        let allowed = cfg
            .buffer
            .min(own.saturating_add(mem.free))
            .min(own.max(mem.fair));
        // never below what was already promised (windows do not shrink)
        allowed
            .saturating_sub(self.held_bytes)
            .max(self.edge.saturating_sub(self.rcv_nxt))
    }

    /// An ACK in the client's name, to the server.
    pub(super) fn spoof_ack(&mut self, cfg: &GatewayConfig, mem: MemShare) -> P {
        let free = self.free_window(cfg, mem);
        self.adv_wnd = free;
        let shift = self.server_view_shift();
        let wire = (free >> shift).min(65_535);
        self.edge = self.edge.max(self.rcv_nxt + (wire << shift));
        let (server, server_port, client, client_port) = self.key;
        let mut seg = Segment {
            sport: client_port,
            dport: server_port,
            seq: self.client.space.map_or(0, |s| s.to_wire(self.client_seq)),
            ack: self
                .server
                .space
                .map_or(0, |s| s.to_wire(self.acked_to_server())),
            flags: ACK,
            window: wire as u16,
            ..Default::default()
        };
        if self.client.ts && self.server.ts {
            seg.opts.timestamps = Some((
                self.stamps.client.unwrap_or(0),
                self.stamps.recent.unwrap_or(0),
            ));
        }
        if self.client.sack && self.server.sack && !self.ooo.is_empty() {
            let most = if seg.opts.timestamps.is_some() { 3 } else { 4 };
            seg.opts.sack = Some(Box::new(self.sack_blocks(most)));
        }
        self.syn_acked = true;
        P::made(Packet::new(client, server, seg))
    }

    /// The out-of-order data as at most `most` SACK blocks in the server's sequence
    /// numbers (RFC 2018 §4: the block holding the segment received last first, then
    /// the others from the highest down).
    pub(super) fn sack_blocks(&self, most: usize) -> SackBlocks {
        let mut runs: Vec<(u64, u64)> = Vec::new();
        for (&q, (p, _)) in &self.ooo {
            let end = q + p.hdr().seg.len as u64;
            match runs.last_mut() {
                Some(r) if q <= r.1 => r.1 = r.1.max(end),
                _ => runs.push((q, end)),
            }
        }
        runs.reverse();
        if let Some(k) = self
            .last_ooo
            .and_then(|l| runs.iter().position(|r| r.0 <= l && l < r.1))
        {
            let r = runs.remove(k);
            runs.insert(0, r);
        }
        let Some(space) = self.server.space else {
            return SackBlocks::default();
        };
        let wire: Vec<(u32, u32)> = runs
            .iter()
            .take(most)
            .map(|&(a, b)| (space.to_wire(a), space.to_wire(b)))
            .collect();
        SackBlocks::from_slice(&wire)
    }

    /// Whether `len` more bytes fit in the connection's buffer beside what it holds.
    pub(super) fn room(&self, cfg: &GatewayConfig, len: u64) -> bool {
        self.held_bytes + self.ooo_bytes + len <= cfg.buffer
    }

    /// Takes the segment that filled `rcv_nxt` into the held data, then the out-of-order
    /// segments that now follow it in sequence; a stale or overlapping one is dropped
    /// (the server will resend what the next ACK does not cover).
    ///
    /// Timestamps: the client applies PAWS (RFC 7323 §5) to what the gateway sends it,
    /// in sequence order, but the segments that waited behind a hole carry older TSvals
    /// than the server's resend that filled it; sent as they are, after the resend, the
    /// client drops them as old duplicates, again at every resend (seen with Linux: the
    /// transfer stalled). So a held segment whose TSval is older than one before it in
    /// sequence carries that one's instead. (Only the client sees these TSvals; its
    /// echoes come back to the gateway, which absorbs them.)
    pub(super) fn accept_in_order(&mut self, seq: u64, pkt: P, seq_len: u64) {
        let mut next = Some((seq, pkt, seq_len));
        while let Some((q, mut p, l)) = next.take() {
            if let Some((v, e)) = p.hdr().seg.opts.timestamps {
                match self.stamps.forward {
                    Some(f) if newer(f, v) => p.hdr_mut().seg.opts.timestamps = Some((f, e)),
                    _ => self.stamps.forward = Some(v),
                }
            }
            let len = p.hdr().seg.len as u64;
            if p.hdr().seg.flags & FIN != 0 {
                self.fin_seen = true;
            }
            self.rcv_nxt = q + len;
            self.held_bytes += len;
            self.hold(q, p, l);
            while let Some(e) = self.ooo.first_entry() {
                if *e.key() > self.rcv_nxt {
                    break;
                }
                let (k, (p, l)) = e.remove_entry();
                self.ooo_bytes -= p.hdr().seg.len as u64;
                if k == self.rcv_nxt && !self.fin_seen {
                    next = Some((k, p, l));
                    break;
                }
            }
        }
        if self.ooo.is_empty() {
            self.last_ooo = None;
        }
    }

    pub(super) fn on_server_segment(
        &mut self,
        cfg: &GatewayConfig,
        mem: MemShare,
        st: &mut GatewayCounters,
        now: SimTime,
        pkt: P,
        out: &mut Vec<P>,
    ) {
        let Some(space) = self.server.space else {
            out.push(pkt);
            return;
        };
        let seg = &pkt.hdr().seg;
        let seq = space.to_rel(seg.seq, self.rcv_nxt);
        if self.held.is_empty() {
            self.last_progress = now;
        }
        let fin = seg.flags & FIN != 0;
        let seq_len = seg.len as u64 + fin as u64;
        let len = seg.len as u64;
        if fin && self.fin_seen && seq + len == self.rcv_nxt {
            // the FIN again (with or without its data): the spoofed ACK of it was lost
            self.fin_again(cfg, mem, st, out);
            return;
        }
        if seq == self.rcv_nxt && seg.len > 0 && !self.fin_seen {
            // shared mode: beyond what was promised, only if the memory has room
            let no_room = cfg.shared && seq + len > self.edge && len > mem.free;
            // a segment that starts inside the window the gateway advertised was invited:
            // it is taken even if it runs past the buffer (a server whose usable window
            // is smaller than a segment may still send one whole, and dropping it cost
            // a Linux-profile server an RTO each time); the next spoofed ACK shrinks the
            // window by what it overran
            let invited = seq < self.edge;
            if !invited && (!self.room(cfg, len) || no_room) {
                st.dropped_buffer_full += 1;
                out.push(self.spoof_ack(cfg, mem));
                return;
            }
            if let Some((v, _)) = seg.opts.timestamps {
                self.stamps.recent = Some(v); // RFC 7323 §4.3: it advanced rcv_nxt
            }
            self.accept_in_order(seq, pkt, seq_len);
            st.max_buffer_bytes.update(self.held_bytes);
            st.spoofed_acks += 1;
            let ack = self.spoof_ack(cfg, mem);
            out.push(ack);
        } else if seg.len == 0 && fin && seq == self.rcv_nxt {
            // a bare FIN: forward in sequence (kept so that it is resent if lost),
            // acknowledged in the client's name
            self.fin_seen = true;
            if let Some((v, _)) = seg.opts.timestamps {
                self.stamps.recent = Some(v);
            }
            self.hold(seq, pkt, seq_len);
            st.spoofed_acks += 1;
            out.push(self.spoof_ack(cfg, mem));
        } else if seg.len > 0
            && seq > self.rcv_nxt
            && seq + len <= self.edge
            && !self.fin_seen
            && !self.ooo.contains_key(&seq)
            && self.room(cfg, len)
        {
            // beyond a hole, within the promised window: kept until the hole is filled
            self.ooo_bytes += len;
            self.ooo.insert(seq, (pkt, seq_len));
            self.last_ooo = Some(seq);
            st.out_of_order_held += 1;
            out.push(self.spoof_ack(cfg, mem));
        } else {
            // a duplicate, or beyond the window or the buffer: a duplicate spoofed ACK,
            // data not kept
            out.push(self.spoof_ack(cfg, mem));
        }
    }
}
