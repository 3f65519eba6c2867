//! Middleboxes that rewrite or originate TCP segments. Sans-IO: packets and `now` in,
//! packets and a wake-up time out, so a real-time daemon can drive the same code.

pub mod gateway;
