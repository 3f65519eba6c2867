//! Network: packets, link directions (queue + transmitter + loss + delay), routing.
pub mod link;
pub mod loss;
pub mod packet;
pub mod routing;
