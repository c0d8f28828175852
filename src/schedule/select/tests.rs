//! Table-driven tests of cluster selection.
