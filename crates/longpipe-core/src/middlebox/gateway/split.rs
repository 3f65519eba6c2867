//! Split mode (PEPsal-like): the gateway terminates the server's connection (a
//! receiver that answers in the client's name) and carries the data to the client on
//! its own connection (a streaming sender in the server's name, with a chosen
//! congestion control). The server-side window is the buffer minus the data the client
//! has not yet acknowledged, so the gateway never holds more than its buffer.
//!
//! Only connections the server opens are split (the simulator's flows); a connection
//! the client opens passes through unaccelerated.

use super::{ConnKey, Dir, GatewayConfig, GatewayCounters, SplitConfig};
use crate::net::packet::Packet;
use crate::rng::stable_hash;
use crate::tcp::endpoint::{Addrs, Endpoint, Side};
use crate::tcp::profile::TcpProfile;
use crate::tcp::receiver::Receiver;
use crate::tcp::rtt::RtoBounds;
use crate::tcp::sender::Sender;
use crate::time::{SimDuration, SimTime};

pub struct SplitConn {
    /// Faces the server (in the client's name).
    to_server: Endpoint,
    /// Faces the client (in the server's name).
    to_client: Endpoint,
    /// Bytes handed from the server-side connection to the client-side one.
    pushed: u64,
    closed: bool,
    last_seen: SimTime,
    /// The deadline the gateway's timer index holds for this connection.
    pub(super) armed: Option<SimTime>,
}

fn isn(k: &ConnKey, side: &str) -> u32 {
    let (s, sp, c, cp) = k;
    stable_hash(&format!("gw-isn/{s:?}:{sp}/{c:?}:{cp}/{side}")) as u32
}

impl SplitConn {
    /// A connection split at the server's SYN `syn`; the gateway's own SYN toward the
    /// client goes to `out`.
    pub fn new(
        cfg: &GatewayConfig,
        split: &SplitConfig,
        k: ConnKey,
        syn: &Packet,
        now: SimTime,
        out: &mut Vec<Packet>,
    ) -> Self {
        let (server, server_port, client, client_port) = k;
        let mss = syn.seg.opts.mss.map_or(536, |m| m as u32);
        // toward the server: a classic receiver of the gateway's buffer, SACK if the
        // server offered it
        let rx_profile = TcpProfile {
            rwnd: cfg.buffer,
            sack: syn.seg.opts.sack_permitted,
            rto: RtoBounds {
                initial: cfg.initial_rto,
                min: cfg.min_rto,
                max: SimDuration::from_secs(60),
            },
            ..TcpProfile::classic_newreno(mss)
        };
        let rx = Receiver::new(rx_profile, None);
        // toward the client: the split mode's profile with the server's segment size
        let leg = TcpProfile {
            mss,
            iw_bytes: split.iw_segments as u64 * mss as u64,
            rto: RtoBounds {
                initial: cfg.initial_rto,
                ..split.leg.rto
            },
            ..split.leg
        };
        let tx = Sender::new_streaming(leg, leg.cc.build());
        let to_server = Endpoint::new(
            Side::Receiver(Box::new(rx)),
            Addrs {
                local: client,
                local_port: client_port,
                remote: server,
                remote_port: server_port,
            },
            isn(&k, "rx"),
            None,
        );
        let mut to_client = Endpoint::new(
            Side::Sender(Box::new(tx)),
            Addrs {
                local: server,
                local_port: server_port,
                remote: client,
                remote_port: client_port,
            },
            isn(&k, "tx"),
            Some(now),
        );
        to_client.on_timeout(now, out);
        SplitConn {
            to_server,
            to_client,
            pushed: 0,
            closed: false,
            last_seen: now,
            armed: None,
        }
    }

    /// Bytes not yet acknowledged by the client.
    fn unread(&self) -> u64 {
        let una = self.to_client.sender().map_or(1, |s| s.tx.snd_una);
        self.pushed - una.saturating_sub(1).min(self.pushed)
    }

    /// Bytes the server considers delivered that only the gateway holds.
    pub fn unsent_acked_bytes(&self) -> u64 {
        self.unread()
    }

    pub fn idle(&self, now: SimTime, timeout: SimDuration) -> bool {
        self.unread() == 0 && self.last_seen + timeout <= now
    }

    pub fn next_timer(&self, cfg: &GatewayConfig) -> Option<SimTime> {
        let mut t = self.to_server.next_timeout();
        if let Some(x) = self.to_client.next_timeout() {
            t = Some(t.map_or(x, |y| y.min(x)));
        }
        if self.unread() == 0 {
            let idle = self.last_seen + cfg.idle_timeout;
            t = Some(t.map_or(idle, |y| y.min(idle)));
        }
        t
    }

    pub fn on_packet(
        &mut self,
        st: &mut GatewayCounters,
        now: SimTime,
        dir: Dir,
        pkt: &Packet,
        out: &mut Vec<Packet>,
    ) {
        self.last_seen = now;
        match dir {
            Dir::ToClient => {
                // the server's connection ends here
                self.to_server.on_packet(now, pkt, out);
                let rx = self.to_server.receiver().expect("receiver side");
                let fresh = rx.delivered() - self.pushed;
                let fin = rx.fin_received();
                if fresh > 0 {
                    self.pushed += fresh;
                    self.to_client
                        .with_sender(out, |s, segs| s.push_data(now, fresh, segs));
                }
                if fin && !self.closed {
                    self.closed = true;
                    self.to_client
                        .with_sender(out, |s, segs| s.close(now, segs));
                }
            }
            // the client answers the gateway's own connection
            Dir::ToServer => self.to_client.on_packet(now, pkt, out),
        }
        // The server-side window: the buffer minus the data not yet acknowledged by the
        // client.
        let unread = self.unread();
        st.max_buffer_bytes.update(unread);
        self.to_server
            .with_receiver(out, |r, segs| r.set_unread(unread, segs));
    }

    pub fn on_timer(&mut self, _st: &mut GatewayCounters, now: SimTime, out: &mut Vec<Packet>) {
        self.to_server.on_timeout(now, out);
        self.to_client.on_timeout(now, out);
    }
}
