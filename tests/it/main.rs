//! Integration tests: the real binary on real files.

mod bad_input;
mod daemon;
mod explain;
mod live;
mod policy_examples;
mod render;
mod support;
mod systemd;
