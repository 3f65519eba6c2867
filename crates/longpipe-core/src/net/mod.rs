//! Network: packets, link directions (queue → transmitter → loss → delay), queue
//! disciplines, loss models, forwarding nodes, routing, capture points.
pub mod capture;
pub mod link;
pub mod loss;
pub mod node;
pub mod packet;
pub mod queue;
pub mod routing;
