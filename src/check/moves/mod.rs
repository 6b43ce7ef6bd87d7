//! What a step moves: a column changed by an amount, charges carried between groups, pages placed
//! on a node.

pub(super) mod change;
pub(super) mod follows;
pub(super) mod moved;
pub(super) mod placed;
