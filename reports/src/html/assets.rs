//! The page's stylesheet and script, written for coordsim (no library), inlined into every
//! report so that it opens without a network.

pub const CSS: &str = include_str!("../../assets/report.css");
pub const JS: &str = include_str!("../../assets/report.js");
