//! A parent against its children, and a group against its node.

pub(super) mod flush;
pub(super) mod parts;
pub(super) mod sums;
pub(super) mod within_node;
