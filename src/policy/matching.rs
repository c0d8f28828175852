//! Which PropagationPolicy claims which template, and selector matching.
