//! A spoofed connection's faults (issue 26): whether a SYN or a RST is its peer's
//! (RFC 5961 §3, §4), the RSTs the gateway sends when it gives a connection up (each at
//! the sequence number its receiver expects), and the connection's state for a
//! listing. See the module's documentation for the rules.

use super::{Conn, Dir, GatewayConfig, GwPacket, MemShare};
use crate::net::packet::{Packet, Segment, ACK, RST};

/// What to do with a RST ([`Conn::rst_verdict`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RstVerdict {
    /// It resets the connection: forget it (toward the client: at the client's own
    /// sequence number, [`Conn::rst_to_client`]).
    Accept,
    /// From the server, in the promised window but not at the next byte: answer with a
    /// challenge ACK (RFC 5961 §3.2), drop it.
    Challenge,
    /// From the server, outside the window: drop it (RFC 5961 §3.2).
    Drop,
    /// From the client, not at its own sequence number: pass it on (the server judges
    /// it) and keep the state.
    Pass,
}

/// A connection's state for a listing (`longpipe gateway status`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ConnInfo {
    /// "handshake", "established", "zero-window", "recovery", "closing".
    pub state: &'static str,
    /// Payload bytes held for the client.
    pub held: u64,
    /// Of those, bytes the server saw acknowledged that the client has not.
    pub acked_undelivered: u64,
    /// Segments resent toward the client.
    pub resent: u64,
    /// The sequence numbers each side expects next, on the wire (what a RST to it must
    /// carry): the client's (from the server's space) and the server's (from the
    /// client's).
    pub client_rcv_nxt: u32,
    pub server_rcv_nxt: u32,
}

impl<P: GwPacket> Conn<P> {
    /// A SYN (or SYN-ACK) from the side in direction `dir` with another ISN than the one
    /// that side opened with (RFC 5961 §4: in a synchronized state a SYN never resets
    /// or replaces the connection; the end host answers it with a challenge ACK).
    pub fn syn_conflicts(&self, dir: Dir, syn: &Packet) -> bool {
        let side = match dir {
            Dir::ToServer => &self.client,
            Dir::ToClient => &self.server,
        };
        side.space.is_some_and(|sp| sp.to_wire(0) != syn.seg.seq)
    }

    /// What a RST travelling in `dir` does (RFC 5961 §3.2).
    pub fn rst_verdict(&self, dir: Dir, rst: &Packet) -> RstVerdict {
        match dir {
            Dir::ToClient => {
                let Some(sp) = self.server.space else {
                    return RstVerdict::Accept;
                };
                let seq = sp.to_rel(rst.seg.seq, self.rcv_nxt);
                // the server's SND.NXT counts its FIN
                let next = self.rcv_nxt + self.fin_seen as u64;
                if seq == next {
                    RstVerdict::Accept
                } else if seq > next && seq < self.edge.max(next + 1) {
                    RstVerdict::Challenge
                } else {
                    RstVerdict::Drop
                }
            }
            Dir::ToServer => {
                let Some(sp) = self.client.space else {
                    return RstVerdict::Accept;
                };
                let seq = sp.to_rel(rst.seg.seq, self.client_seq);
                let sent = self.client_seq + self.client_fin as u64;
                if (self.server_ack.min(sent)..=sent).contains(&seq) {
                    RstVerdict::Accept
                } else {
                    RstVerdict::Pass
                }
            }
        }
    }

    /// A RST toward the client at the byte it expects next (the gateway's best
    /// knowledge: what it acknowledged), in the server's name.
    pub fn rst_to_client(&self) -> P {
        let (server, server_port, client, client_port) = self.key;
        let seg = Segment {
            sport: server_port,
            dport: client_port,
            seq: self.server.space.map_or(0, |s| s.to_wire(self.client_una)),
            ack: self.client.space.map_or(0, |s| s.to_wire(self.server_ack)),
            flags: RST | ACK,
            window: 0,
            ..Default::default()
        };
        P::made(Packet::new(server, client, seg))
    }

    /// A RST toward the server at the byte it expects next (what the client sent), in
    /// the client's name.
    pub fn rst_to_server(&self) -> P {
        let (server, server_port, client, client_port) = self.key;
        let sent = self.client_seq + self.client_fin as u64;
        let seg = Segment {
            sport: client_port,
            dport: server_port,
            seq: self.client.space.map_or(0, |s| s.to_wire(sent)),
            ack: self
                .server
                .space
                .map_or(0, |s| s.to_wire(self.acked_to_server())),
            flags: RST | ACK,
            window: 0,
            ..Default::default()
        };
        P::made(Packet::new(client, server, seg))
    }

    /// A challenge ACK (RFC 5961 §3.2) toward the server: the gateway's current ACK in
    /// the client's name.
    pub fn challenge_ack(&mut self, cfg: &GatewayConfig, mem: MemShare) -> P {
        self.spoof_ack(cfg, mem)
    }

    /// The connection cannot go on without the gateway: it holds bytes the server saw
    /// acknowledged, or the server still sends and reads the client's windows with a
    /// scale the gateway substituted for the client's own. Once the client has
    /// acknowledged the server's FIN the server sends nothing more, and the rest of the
    /// close (the client's FIN, the server's ACK of it) needs no window: it goes on end
    /// to end.
    pub fn needs_gateway(&self) -> bool {
        let rescaled = self.scaling() && self.client.wscale != Some(self.gw_shift);
        !self.held.is_empty() || !self.ooo.is_empty() || (rescaled && !self.fin_acked)
    }

    /// The gateway gives the connection up: a RST to each end at the number the
    /// gateway knows it expects, then to each a probe — an ACK one byte below that
    /// number, as a keep-alive is (RFC 1122 §4.2.3.6) — in case the end has moved on
    /// (its ACKs still on their way): a receiver drops a RST below its window silently
    /// (RFC 5961 §3.2) but answers the probe with its exact ACK, which, the gateway's
    /// state gone, reaches the other end; that end, reset, answers with a RST at
    /// exactly that number (RFC 793: a closed port's RST carries the segment's ACK).
    pub fn rsts(&self, out: &mut Vec<P>) {
        out.push(self.rst_to_server());
        out.push(self.rst_to_client());
        for mut p in [self.rst_to_server(), self.rst_to_client()] {
            let q = p.hdr_mut();
            q.seg.seq = q.seg.seq.wrapping_sub(1);
            q.seg.flags = ACK;
            out.push(p);
        }
    }

    /// The connection for a listing.
    pub fn info(&self) -> ConnInfo {
        let state = if !self.established {
            "handshake"
        } else if self.fin_seen || self.client_fin {
            "closing"
        } else if self.shut() && !self.held.is_empty() {
            "zero-window"
        } else if self.in_recovery || self.rto_probe {
            "recovery"
        } else {
            "established"
        };
        ConnInfo {
            state,
            held: self.held_bytes,
            acked_undelivered: self.unsent_acked_bytes(),
            resent: self.resent,
            client_rcv_nxt: self.server.space.map_or(0, |s| s.to_wire(self.client_una)),
            server_rcv_nxt: self
                .client
                .space
                .map_or(0, |s| s.to_wire(self.client_seq + self.client_fin as u64)),
        }
    }
}
