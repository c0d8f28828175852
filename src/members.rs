//! members
