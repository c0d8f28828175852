//! The ground floor: small pure helpers every layer may use. Imports nothing from the crate
//! (the architecture test in `tests/it/architecture.rs` checks it).
//!
//! - [`hash`]: the stable content hashes (FNV-1a) used for versions, keys and tie-breaks.
//! - [`clock`]: the wall clock behind a trait, so the daemon can be driven by a test clock.
//! - [`diff`]: unified diffs of two texts (`fedsched plan --diff`).
//! - [`percent`]: percent-encoding of URL path segments and query values, and its inverse.
//! - [`stdio`]: stdout and stderr without a panic when the reader went away (`EPIPE`).
//! - [`stat`]: a file's stat as proof that its bytes did not change (git's racy rule).
//! - [`gosort`]: Go's `sort.Sort` ported exactly, to break ties as Karmada's scheduler does.
//! - [`derived`]: a value derived from its owner's content, kept beside it, not content.
//! - [`threads`]: how many threads a pass's parallel steps use (`FEDSCHED_THREADS`), and the
//!   one helper that maps a slice on them in order (`map_ordered`).

pub mod clock;
pub mod derived;
pub mod diff;
pub mod gosort;
pub mod hash;
pub mod percent;
pub mod stat;
pub mod stdio;
pub mod threads;
