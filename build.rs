//! Build script: the git commit the binary is built from, for `fedsched --version`
//! (`FEDSCHED_COMMIT`: `git rev-parse --short=12 HEAD`, or "unknown" when git or the
//! repository is not there). Never fails the build.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=FEDSCHED_COMMIT={commit}");
    println!("cargo:rerun-if-changed=build.rs");
    // Built again when HEAD moves: HEAD itself, the branch it points to, packed refs.
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(branch);
    }
    for name in watched {
        // Only files that exist: a missing one would run this script on every build.
        if let Some(path) = git(&["rev-parse", "--git-path", &name])
            && std::path::Path::new(&path).exists()
        {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}
