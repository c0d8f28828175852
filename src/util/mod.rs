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
//! - [`memo`]: one memo shape: a value per typed key (an `Arc`'s identity holds the `Arc`), one
//!   compute function, compared with it in debug builds.
//! - [`threads`]: how many threads a pass's parallel steps use (`FEDSCHED_THREADS`), and the
//!   one helper that maps a slice on them in order (`map_ordered`).
//!
//! # In detail
//!
//! **The ground floor**: `hash.rs` (FNV-1a 64 and 32: every stored hash, key and Karmada's Webster
//! tie-break; `IdHasher`/`IdMap` for in-memory maps keyed by process-local ids; `KeyMap`/`KeySet`,
//! foldhash seeded per process, for in-memory maps keyed by object keys and names read from outside
//! — a pass's per-workload decisions, placements and requirements), `clock.rs` (`Clock`,
//! `SystemClock`, `ManualClock`, `now_ms`, `rfc3339_ms`, the one RFC 3339 formatter, the
//! simulator's included: the edges read the wall clock here and pass milliseconds down),
//! `percent.rs` (percent-encoding of URL segments, and its inverse for the simulator), `gosort.rs`
//! (Go's `sort.Sort` ported exactly — pdqsort, unstable beyond 12 elements — used only where
//! Karmada calls `sort.Sort` on a comparator with ties; checked against permutations Go produced,
//! `gosort/go_vectors.txt`, made by `gosort/go_vectors.sh` from Go's own sources), `stat.rs`
//! (`FileStat`, `RACY_NS`, `read_file`: a file's stat — size, modification and change times, inode
//! — as proof that its bytes did not change, with git's racy rule; the parse cache and the
//! restart's check of the output use it; `open_untouched`, `list_dir_untouched`: the output's files
//! are read and its directories listed without updating their access time, `O_NOATIME`, so a full
//! check does not dirty every inode for the next `syncfs`), `threads.rs` (`workers`, `map_ordered`,
//! `map_into_ordered`: every parallel step — staging, the output diff, the render batch,
//! reading/parsing/typing the repository, decoding and restoring the store's decisions, rebuilding
//! member views — gets its answers back in input order, so the bytes are the same on any thread
//! count; also a request's first node indexes and the rebuilt views' deduction plans; `on_pool`,
//! `split_zip`: steps of microseconds — one decision's per-cluster estimates — split on a rayon
//! pool the decide stage enters once, whose other threads stay awake for the stage (a sleeping
//! thread takes as long to wake on this kind of VM as the step), each run filling its items' own
//! slots made on the caller's thread), `derived.rs` (`Derived<T>`: a value derived from its owner's
//! content and kept beside it — made once from any thread, reset by an in-place change, not
//! content; a snapshot's node index and its summary's free amounts), `stdio.rs` (every print of the
//! crate: `outln!`/`out!`/`errln!`; a closed stdout ends the process with 141, quietly — the lint
//! `clippy::print_stdout`/`print_stderr` is denied outside tests). Pure, imports nothing.

pub mod clock;
pub mod derived;
pub mod diff;
pub mod gosort;
pub mod hash;
pub mod memo;
pub mod percent;
pub mod stat;
pub mod stdio;
pub mod threads;
