//! One link direction of a scenario, built the same way by the simulator and by the
//! live emulator (which carries raw IPv4 buffers instead of [`crate::unit::Unit`]): its
//! loss and queue streams named after the link, its stages from the resolved spec, as
//! the element both drivers add ([`Direction`]).

use crate::element::Frame;
use crate::l2::atm::AtmLineConfig;
use crate::l2::rlc::RlcLink;
use crate::l2::{Direction, Layer2Config};
use crate::net::link::LinkDirection;
use crate::net::loss::LossState;
use crate::rng::RngStream;
use crate::scenario::ValidScenario;

/// The name of link direction `d` of link `li`'s loss stream: stable under adding
/// flows or other links; a second parallel link between the same two nodes gets a
/// suffix, so parallel links never share losses. The live emulator names its streams
/// with it too, so that an emulated link loses what the simulated one would.
pub fn loss_stream(sc: &ValidScenario, li: usize, from: usize, to: usize) -> String {
    let (a, b) = (&sc.nodes[from].name, &sc.nodes[to].name);
    let base = sc.links[li].stream_name(&format!("link/{a}->{b}"));
    format!("{base}/loss")
}

/// The name of a link direction's queue-discipline stream, beside its loss stream's.
pub fn queue_stream(loss_stream: &str) -> String {
    let base = loss_stream.strip_suffix("/loss").unwrap_or(loss_stream);
    format!("{base}/queue")
}

/// What a link direction is built as.
// (made once per direction and moved into the driver's element enum, where the element
// stays inline: no box to take out of again)
#[allow(clippy::large_enum_variant)]
pub enum Built<'a, U> {
    /// The element, over units `U`.
    Packets(Direction<U>),
    /// An ATM direction: it carries cells, which only the simulator models (its ATM
    /// line, `sim/atm.rs`); its loss state is seeded like any other direction's.
    Cells(&'a AtmLineConfig, LossState),
}

/// Direction `k` (0: a→b, 1: b→a) of link `li`, seeded from `seed`.
pub fn direction<U: Frame + Clone + Send + 'static>(
    sc: &ValidScenario,
    li: usize,
    k: usize,
    seed: u64,
) -> Built<'_, U> {
    let l = &sc.links[li];
    let info = &l.dirs[k];
    let (from, to) = if k == 0 { (l.a, l.b) } else { (l.b, l.a) };
    let stream = loss_stream(sc, li, from, to);
    let loss = LossState::new(info.link.loss.clone(), RngStream::new(seed, &stream));
    Built::Packets(match &info.layer2 {
        None => Direction::Link(LinkDirection::build(
            &info.link,
            loss,
            RngStream::new(seed, &queue_stream(&stream)),
            seed,
        )),
        Some(Layer2Config::RlcAm(cfg)) => Direction::Rlc(Box::new(RlcLink::new(
            cfg.clone(),
            info.link.rate,
            info.link.delay,
            l.dirs[1 - k].link.delay,
            info.link.queue.admission,
            loss,
        ))),
        Some(Layer2Config::Atm(cfg)) => return Built::Cells(cfg, loss),
    })
}
