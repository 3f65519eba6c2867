//! Network: packets, link directions (queue → transmitter → loss → delay), queue
//! disciplines, loss models, schedules and traces (links that change over time),
//! forwarding nodes, routing, capture points.
pub mod capture;
pub mod link;
pub mod loss;
pub mod node;
pub mod packet;
pub mod queue;
pub mod routing;
pub mod schedule;
pub mod trace;
