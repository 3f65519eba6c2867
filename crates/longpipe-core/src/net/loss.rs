//! Loss models of a link direction (its impairment stage), applied to each unit as it
//! leaves the transmitter; link layers apply them per link-layer unit (PDU, cell).
//! Randomness comes only from the direction's own seeded stream.

use crate::element::Frame;
use crate::error::{check_prob, err, ScenarioError};
use crate::rng::RngStream;
use crate::tagged::{self, Kind, NoKeys};
use schemars::gen::SchemaGenerator;
use schemars::schema::Schema;
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};
use std::collections::{BTreeMap, BTreeSet};

/// The scenario's `loss = { kind = ... }` of one link direction: a table tagged by `kind`
/// ([`crate::tagged`]), each kind's keys its own type.
#[derive(Debug, Clone)]
pub enum LossSpec {
    None(NoLoss),
    Bernoulli(Bernoulli),
    Ber(Ber),
    Gilbert(Gilbert),
    List(DropList),
    Seq(SeqList),
}

/// No loss (to end a scheduled loss period).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoLoss {}

/// Each packet independently lost with probability p.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Bernoulli {
    pub p: f64,
}

/// Independent bit errors: P(loss) = 1 - (1 - ber)^(8 * bytes).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Ber {
    pub ber: f64,
}

/// Two-state Gilbert-Elliott chain, stepped once per packet: good->bad with probability
/// p_gb, bad->good with p_bg; loss probability loss_good / loss_bad.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Gilbert {
    pub p_gb: f64,
    pub p_bg: f64,
    #[serde(default)]
    pub loss_good: Option<f64>,
    #[serde(default)]
    pub loss_bad: Option<f64>,
}

/// Drop exactly the packets with these 0-based indices, counted over every packet that
/// leaves this link direction (SYN = 0, ...). For exact tests.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DropList {
    pub drop: Vec<u64>,
}

/// Drop the first TCP segment of each connection that starts at one of these relative
/// sequence numbers (the SYN is 0, the first data byte 1; as in the time series), once
/// each; like ns-3's `TcpSeqErrorModel`. Pure ACKs (no payload, SYN or FIN) are never
/// dropped. A connection is recognised by its SYN on this link direction. For exact
/// tests.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SeqList {
    pub drop: Vec<u64>,
}

macro_rules! loss_kinds {
    ($($v:ident = $name:literal => $t:ty),+ $(,)?) => {
        $(impl From<$t> for LossSpec {
            fn from(s: $t) -> Self {
                LossSpec::$v(s)
            }
        })+
        const KINDS: &[Kind<LossSpec>] = &[$(Kind::of::<$t>(&[$name])),+];
    };
}

loss_kinds! {
    None = "none" => NoLoss,
    Bernoulli = "bernoulli" => Bernoulli,
    Ber = "ber" => Ber,
    Gilbert = "gilbert" => Gilbert,
    List = "list" => DropList,
    Seq = "seq" => SeqList,
}

impl<'de> Deserialize<'de> for LossSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        tagged::read::<_, NoKeys, _>(d, KINDS, None, "loss model").map(|(_, s)| s)
    }
}

impl JsonSchema for LossSpec {
    fn schema_name() -> String {
        "LossSpec".into()
    }
    fn json_schema(gen: &mut SchemaGenerator) -> Schema {
        let doc = "The loss model of a link direction: its `kind` and that kind's keys.";
        tagged::schema::<NoKeys, _>(gen, doc, KINDS, None)
    }
}

/// A resolved loss model.
#[derive(Debug, Clone, PartialEq)]
pub enum LossModel {
    None,
    Bernoulli {
        p: f64,
    },
    Ber {
        ber: f64,
    },
    Gilbert {
        p_gb: f64,
        p_bg: f64,
        loss_good: f64,
        loss_bad: f64,
    },
    /// Sorted, without duplicates.
    List {
        drop: Vec<u64>,
    },
    /// Sorted, without duplicates.
    Seq {
        drop: Vec<u64>,
    },
}

impl LossSpec {
    /// Checks and defaults; `path` is the spec's field path.
    pub fn resolve(spec: Option<&LossSpec>, path: &str) -> Result<LossModel, ScenarioError> {
        let sorted = |v: &Vec<u64>| {
            let mut d = v.clone();
            d.sort_unstable();
            d.dedup();
            d
        };
        Ok(match spec {
            None | Some(LossSpec::None(_)) => LossModel::None,
            Some(LossSpec::Bernoulli(Bernoulli { p })) => LossModel::Bernoulli {
                p: check_prob(format!("{path}.p"), *p)?,
            },
            Some(LossSpec::Ber(Ber { ber })) => LossModel::Ber {
                ber: check_prob(format!("{path}.ber"), *ber)?,
            },
            Some(LossSpec::Gilbert(Gilbert {
                p_gb,
                p_bg,
                loss_good,
                loss_bad,
            })) => LossModel::Gilbert {
                p_gb: check_prob(format!("{path}.p_gb"), *p_gb)?,
                p_bg: check_prob(format!("{path}.p_bg"), *p_bg)?,
                loss_good: check_prob(format!("{path}.loss_good"), loss_good.unwrap_or(0.0))?,
                loss_bad: check_prob(format!("{path}.loss_bad"), loss_bad.unwrap_or(1.0))?,
            },
            Some(LossSpec::List(DropList { drop })) => LossModel::List { drop: sorted(drop) },
            Some(LossSpec::Seq(SeqList { drop })) => {
                if drop.iter().any(|&s| s > u32::MAX as u64) {
                    return err(
                        format!("{path}.drop"),
                        "sequence numbers must be below 2^32",
                    );
                }
                LossModel::Seq { drop: sorted(drop) }
            }
        })
    }
}

type ConnKey = ([u8; 4], u16, [u8; 4], u16);

/// A loss model with its state and random stream.
#[derive(Debug, Clone)]
// (`repr(C)`, the index and the model first: all that a unit reads without loss.)
#[repr(C)]
pub struct LossState {
    /// Units offered so far (the index `list` refers to).
    index: u64,
    model: LossModel,
    rng: RngStream,
    /// Gilbert-Elliott: true while in the bad state.
    bad: bool,
    /// Next position in the sorted drop list.
    next: usize,
    /// `seq`: per connection, its ISN and the listed numbers already dropped.
    conns: BTreeMap<ConnKey, (u32, BTreeSet<u64>)>,
}

impl LossState {
    pub fn new(model: LossModel, rng: RngStream) -> Self {
        LossState {
            model,
            rng,
            bad: false,
            index: 0,
            next: 0,
            conns: BTreeMap::new(),
        }
    }

    pub fn is_none(&self) -> bool {
        matches!(self.model, LossModel::None)
    }

    /// Replaces the model (a scheduled change); the stream and the unit count go on, a
    /// Gilbert-Elliott chain starts in its good state.
    pub fn set_model(&mut self, model: LossModel) {
        self.model = model;
        self.bad = false;
        self.next = match &self.model {
            LossModel::List { drop } => drop.partition_point(|&i| i < self.index),
            _ => 0,
        };
    }

    /// Whether the model needs whole TCP segments (it cannot apply to link-layer units).
    pub fn needs_segments(&self) -> bool {
        matches!(self.model, LossModel::Seq { .. })
    }

    /// Decides the fate of the next unit; true = lost.
    pub fn lose<F: Frame>(&mut self, unit: &F) -> bool {
        if let LossModel::Seq { drop } = &self.model {
            self.index += 1;
            let Some(m) = unit.tcp_meta() else {
                return false;
            };
            let key = (m.src, m.sport, m.dst, m.dport);
            if m.flags & crate::wire::SYN != 0 {
                self.conns.entry(key).or_insert((m.seq, BTreeSet::new()));
            }
            let Some((isn, done)) = self.conns.get_mut(&key) else {
                return false;
            };
            // a pure ACK (no payload, SYN or FIN) occupies no sequence space: never
            // "the segment that starts at" a listed number
            if m.len == 0 && m.flags & (crate::wire::SYN | crate::wire::FIN) == 0 {
                return false;
            }
            let rel = m.seq.wrapping_sub(*isn) as u64;
            return drop.binary_search(&rel).is_ok() && done.insert(rel);
        }
        self.lose_bytes(unit.wire_len())
    }

    /// Decides the fate of the next unit of `bytes` octets; true = lost.
    pub fn lose_bytes(&mut self, bytes: u32) -> bool {
        let idx = self.index;
        self.index += 1;
        match &self.model {
            LossModel::None | LossModel::Seq { .. } => false,
            LossModel::Bernoulli { p } => self.rng.bernoulli(*p),
            LossModel::Ber { ber } => {
                // P = 1 - (1 - ber)^(8 * bytes), computed stably for tiny ber.
                let p = -f64::exp_m1(8.0 * bytes as f64 * f64::ln_1p(-*ber));
                self.rng.bernoulli(p)
            }
            LossModel::Gilbert {
                p_gb,
                p_bg,
                loss_good,
                loss_bad,
            } => {
                // Lose with the current state's probability, then step the chain.
                let lost = self
                    .rng
                    .bernoulli(if self.bad { *loss_bad } else { *loss_good });
                let flip = self.rng.bernoulli(if self.bad { *p_bg } else { *p_gb });
                if flip {
                    self.bad = !self.bad;
                }
                lost
            }
            LossModel::List { drop } => {
                if drop.get(self.next) == Some(&idx) {
                    self.next += 1;
                    true
                } else {
                    false
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::element::TcpMeta;

    #[test]
    fn list_drops_exact_indices() {
        let mut l = LossState::new(LossModel::List { drop: vec![1, 4] }, RngStream::new(1, "x"));
        let v: Vec<bool> = (0..6).map(|_| l.lose_bytes(100)).collect();
        assert_eq!(v, [false, true, false, false, true, false]);
    }

    #[test]
    fn ber_is_length_aware() {
        let n = 100_000;
        let mut l = LossState::new(LossModel::Ber { ber: 1e-5 }, RngStream::new(3, "ber"));
        let lost = (0..n).filter(|_| l.lose_bytes(1500)).count() as f64 / n as f64;
        let expect = 1.0 - (1.0f64 - 1e-5).powi(12000);
        assert!((lost - expect).abs() < 0.01, "{lost} vs {expect}");
        let mut l = LossState::new(LossModel::Ber { ber: 1e-5 }, RngStream::new(3, "ber"));
        let lost40 = (0..n).filter(|_| l.lose_bytes(40)).count() as f64 / n as f64;
        assert!(lost40 < lost / 10.0);
        let p40 = 1.0 - (1.0f64 - 1e-5).powi(320);
        assert!((lost40 - p40).abs() < 0.002, "{lost40} vs {p40}");
    }

    #[test]
    fn gilbert_mean_loss_and_burstiness() {
        // stationary P(bad) = p_gb / (p_gb + p_bg) = 0.01/0.11; mean burst 1/p_bg = 10
        let m = LossModel::Gilbert {
            p_gb: 0.01,
            p_bg: 0.1,
            loss_good: 0.0,
            loss_bad: 1.0,
        };
        let mut l = LossState::new(m, RngStream::new(9, "g"));
        let n = 400_000;
        let v: Vec<bool> = (0..n).map(|_| l.lose_bytes(1000)).collect();
        let lost = v.iter().filter(|&&x| x).count() as f64 / n as f64;
        assert!((lost - 0.01 / 0.11).abs() < 0.01, "{lost}");
        let bursts = v.windows(2).filter(|w| w[1] && !w[0]).count() as f64;
        let mean_burst = v.iter().filter(|&&x| x).count() as f64 / bursts;
        assert!((mean_burst - 10.0).abs() < 1.0, "{mean_burst}");
    }

    struct Seg(TcpMeta);
    impl Frame for Seg {
        fn wire_len(&self) -> u32 {
            40 + self.0.len
        }
        fn tcp_meta(&self) -> Option<TcpMeta> {
            Some(self.0)
        }
    }

    fn seg(sport: u16, seq: u32, flags: u8) -> Seg {
        Seg(TcpMeta {
            src: [10, 0, 0, 1],
            dst: [10, 0, 0, 2],
            sport,
            dport: 5001,
            seq,
            flags,
            len: 1000,
        })
    }

    #[test]
    fn seq_drops_each_listed_number_once_per_connection() {
        use crate::wire::{ACK, SYN};
        let spec = LossSpec::Seq(SeqList {
            drop: vec![2001, 1, 2001],
        });
        let m = LossSpec::resolve(Some(&spec), "l").unwrap();
        assert_eq!(
            m,
            LossModel::Seq {
                drop: vec![1, 2001]
            }
        );
        let mut l = LossState::new(m, RngStream::new(1, "s"));
        let isn = u32::MAX - 500; // the data crosses the 32-bit wrap
        assert!(!l.lose(&seg(1, isn, SYN)));
        let rel = |r: u32| isn.wrapping_add(r);
        let got: Vec<bool> = [1, 1001, 2001, 3001, 2001, 1]
            .iter()
            .map(|&r| l.lose(&seg(1, rel(r), ACK)))
            .collect();
        assert_eq!(got, [true, false, true, false, false, false]);
        // Another connection has its own ISN and its own drops; one whose SYN was not
        // seen is left alone.
        assert!(!l.lose(&seg(2, 7, SYN)));
        // the handshake's pure ACK starts at relative 1 too, but carries nothing
        let mut pure = seg(2, 8, ACK);
        pure.0.len = 0;
        assert!(!l.lose(&pure));
        assert!(l.lose(&seg(2, 8, ACK)));
        assert!(!l.lose(&seg(3, 8, ACK)));
    }
}
