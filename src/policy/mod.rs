//! Policy: what may run now.

pub mod review;
