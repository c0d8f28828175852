//! Integration tests: the real binary on real files.

mod api;
mod bad_input;
mod daemon;
mod explain;
mod policy_examples;
mod render;
mod support;
mod systemd;
