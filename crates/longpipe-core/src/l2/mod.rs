//! Link layers that cut IP packets (SDUs) into smaller units with their own
//! retransmission or discard rules. Each is an [`crate::element::Element`] that replaces
//! a link direction's plain queue and transmitter: SDUs in, timed SDUs out at the far
//! end. One file per link layer and one arm in [`Layer2Spec`] / [`Layer2Config`].

pub mod atm;
pub mod rlc;

use crate::error::ScenarioError;
use crate::tagged::{self, Kind, NoKeys};
use schemars::gen::SchemaGenerator;
use schemars::schema::Schema;
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};

/// The scenario's `layer2 = { kind = ..., ... }` of one link direction (a table tagged
/// by `kind`, [`crate::tagged`]).
#[derive(Debug, Clone)]
pub enum Layer2Spec {
    /// 3GPP TS 25.322 RLC acknowledged mode; the link rate is the bearer's payload rate.
    RlcAm(rlc::RlcSpec),
    /// ATM with AAL5: cells at the link rate; see docs/notes/atm.md.
    Atm(atm::AtmLineSpec),
}

const KINDS: &[Kind<Layer2Spec>] = &[
    Kind::of::<rlc::RlcSpec>(&["rlc-am"]),
    Kind::of::<atm::AtmLineSpec>(&["atm"]),
];

impl From<rlc::RlcSpec> for Layer2Spec {
    fn from(s: rlc::RlcSpec) -> Self {
        Layer2Spec::RlcAm(s)
    }
}

impl From<atm::AtmLineSpec> for Layer2Spec {
    fn from(s: atm::AtmLineSpec) -> Self {
        Layer2Spec::Atm(s)
    }
}

impl<'de> Deserialize<'de> for Layer2Spec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        tagged::read::<_, NoKeys, _>(d, KINDS, None, "link layer").map(|(_, s)| s)
    }
}

impl JsonSchema for Layer2Spec {
    fn schema_name() -> String {
        "Layer2Spec".into()
    }
    fn json_schema(gen: &mut SchemaGenerator) -> Schema {
        tagged::schema::<NoKeys, _>(gen, KINDS, None)
    }
}

/// A resolved link layer.
#[derive(Debug, Clone)]
pub enum Layer2Config {
    RlcAm(rlc::RlcConfig),
    Atm(atm::AtmLineConfig),
}

impl Layer2Spec {
    pub fn resolve(&self, path: &str) -> Result<Layer2Config, ScenarioError> {
        Ok(match self {
            Layer2Spec::RlcAm(s) => Layer2Config::RlcAm(s.resolve(path)?),
            Layer2Spec::Atm(s) => Layer2Config::Atm(s.resolve(path)?),
        })
    }

    /// What the reverse direction gets when only this one is given: an ATM link is ATM
    /// both ways (with the default options); other layers apply to one direction.
    pub fn reverse_default(&self) -> Option<Layer2Spec> {
        match self {
            Layer2Spec::Atm(_) => Some(Layer2Spec::Atm(atm::AtmLineSpec::default())),
            Layer2Spec::RlcAm(_) => None,
        }
    }
}
