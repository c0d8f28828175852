//! Integration tests: the real binary on real files.

mod bad_input;
mod daemon;
mod deps;
mod explain;
mod policy_examples;
mod render;
mod scoring;
mod support;
mod systemd;
