//! Integration tests: the real binary on real files.

mod api;
mod architecture;
mod bad_input;
mod check_output;
mod consumers;
mod daemon;
mod deps;
mod explain;
mod failover;
mod fields;
mod interpreter;
mod live;
mod logs;
mod overrides;
mod policy_examples;
mod render;
mod resources;
mod scoring;
mod status;
mod support;
mod systemd;
mod tools;
mod unsafe_input;
