//! Small helpers shared by the layers, belonging to none of them.

pub mod dirlock;
pub mod fault;
pub mod statefile;
pub mod sys;
pub mod workers;
