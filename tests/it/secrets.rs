//! Secrets in the output (issue 47): never clear text unless asked; SOPS-encrypted for each
//! cluster's age recipient, decrypted here by the real `sops` with a key made by the real
//! `age-keygen`, as Flux's kustomize-controller does; the store, the summary, the history and
//! the plan never hold a Secret's value.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::*;
use crate::tools;

/// A value that must never appear outside the repository (and its base64 form, in `data`).
const CANARY: &str = "canary-s3cr3t-7f1d";
const CANARY_B64: &str = "Y2FuYXJ5LXMzY3IzdC03ZjFk";

/// A Secret a policy places on two clusters (with `data`, `stringData`, labels, an annotation
/// that looks like a number and `immutable`), and a Deployment whose `envFrom` pulls another
/// Secret in through `propagateDeps`.
fn repository(password: &str) -> String {
    format!(
        r#"apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {{name: db, namespace: shop}}
spec:
  resourceSelectors:
  - {{apiVersion: v1, kind: Secret, name: db}}
  placement:
    clusterAffinity: {{clusterNames: [eu-west-a, eu-west-b]}}
---
apiVersion: v1
kind: Secret
metadata:
  name: db
  namespace: shop
  labels: {{app: db}}
  annotations: {{rotation: "2"}}
type: Opaque
immutable: false
data:
  password: {password}
stringData:
  user: admin
  dsn: "postgres://admin@db:5432/shop"
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {{name: app, namespace: shop}}
spec:
  propagateDeps: true
  resourceSelectors:
  - {{apiVersion: apps/v1, kind: Deployment, name: app}}
  placement:
    clusterAffinity: {{clusterNames: [eu-west-a]}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: app, namespace: shop}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: app}}}}
  template:
    metadata: {{labels: {{app: app}}}}
    spec:
      containers:
      - name: app
        image: registry.example.com/app:1
        envFrom: [{{secretRef: {{name: app-secret}}}}]
---
apiVersion: v1
kind: Secret
metadata: {{name: app-secret, namespace: shop}}
stringData: {{token: {CANARY}-token}}
"#
    )
}

const DB: &str = "shop/core_secret_db.yaml";
const APP_SECRET: &str = "shop/core_secret_app-secret.yaml";

/// An age key pair made by `age-keygen`: (identity file, recipient).
fn age_key(dir: &Path, name: &str, keygen: &Path) -> (PathBuf, String) {
    let file = dir.join(format!("{name}.agekey"));
    let out = Command::new(keygen).arg("-o").arg(&file).output().expect("age-keygen");
    assert!(out.status.success(), "age-keygen: {}", text(&out.stderr));
    let key = std::fs::read_to_string(&file).expect("key file");
    let recipient = key
        .lines()
        .find_map(|l| l.strip_prefix("# public key: "))
        .expect("the key file names its public key")
        .to_string();
    (file, recipient)
}

/// `sops --decrypt` with one identity, as Flux does (`SOPS_AGE_KEY_FILE`); extra args first.
fn sops_decrypt(key: &Path, file: &Path, args: &[&str]) -> std::process::Output {
    Command::new(tools::sops())
        .args(args)
        .arg("--decrypt")
        .arg(file)
        .env("SOPS_AGE_KEY_FILE", key)
        .env_remove("SOPS_AGE_KEY")
        .output()
        .expect("run sops")
}

fn yaml(bytes: &[u8]) -> serde_json::Value {
    serde_saphyr::from_str(&text(bytes)).expect("YAML")
}

/// The render of `s` with `config` (written beside the repository).
fn render(s: &Scratch, config: &str) -> std::process::Output {
    let path = s.dir.path().join("fedsched.toml");
    std::fs::write(&path, config).expect("config");
    s.render_with(&["--config", path.to_str().expect("utf-8")], &[])
}

/// `fedsched check` of `s`'s repository, with `config` when given.
fn check(s: &Scratch, config: Option<&Path>) -> std::process::Output {
    let policies = s.policies();
    let mut args = vec!["check", "--policies", policies.to_str().expect("utf-8")];
    if let Some(c) = config {
        args.extend(["--config", c.to_str().expect("utf-8")]);
    }
    fedsched(&args)
}

/// Every byte of every file under `dir`, for a search.
fn all_bytes(dir: &Path) -> Vec<(String, Vec<u8>)> {
    tree(dir).into_iter().collect()
}

fn assert_absent(what: &str, files: &[(String, Vec<u8>)], needles: &[&str]) {
    for (path, bytes) in files {
        for n in needles {
            let found = bytes.windows(n.len()).any(|w| w == n.as_bytes());
            assert!(!found, "{what}: {path} holds the Secret value {n:?}");
        }
    }
}

struct Keys {
    a: (PathBuf, String),
    b: (PathBuf, String),
}

/// A scratch demo repository with the Secrets, eu-west-b's recipient on its Cluster object,
/// and the config naming eu-west-a's.
fn setup(keygen: &Path) -> (Scratch, Keys, String) {
    let s = Scratch::with_demo();
    let keys = Keys { a: age_key(s.dir.path(), "a", keygen), b: age_key(s.dir.path(), "b", keygen) };
    s.write("apps/secrets.yaml", &repository(CANARY_B64));
    let clusters = s.policies().join("clusters/eu-west.yaml");
    let text = std::fs::read_to_string(&clusters).expect("read");
    let annotated = text.replacen(
        "  name: eu-west-b\n",
        &format!("  name: eu-west-b\n  annotations: {{fedsched.io/age-recipient: {}}}\n", keys.b.1),
        1,
    );
    assert_ne!(annotated, text, "the demo has eu-west-b");
    std::fs::write(&clusters, annotated).expect("write");
    let config = format!("[secrets]\nmode = \"sops\"\n\n[clusters.eu-west-a]\nage_recipient = \"{}\"\n", keys.a.1);
    (s, keys, config)
}

#[test]
fn sops_secrets_decrypt_with_the_real_sops_and_age_as_flux_does() {
    let Some(keygen) = tools::age_keygen() else { return };
    let (s, keys, config) = setup(&keygen);
    let out = render(&s, &config);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let files = tree(&s.out());
    let get = |cluster: &str, rel: &str| -> Vec<u8> {
        files.get(&format!("{cluster}/{rel}")).unwrap_or_else(|| panic!("{cluster}/{rel} not written")).clone()
    };
    for (cluster, (key, recipient)) in [("eu-west-a", &keys.a), ("eu-west-b", &keys.b)] {
        let encrypted = get(cluster, DB);
        let doc = yaml(&encrypted);
        assert!(text(&encrypted).starts_with("# Generated by fedsched."), "the header stays: {}", text(&encrypted));
        assert_eq!(doc["sops"]["age"][0]["recipient"], recipient.as_str());
        assert_eq!(doc["sops"]["encrypted_regex"], "^(data|stringData)$");
        assert!(doc["data"]["password"].as_str().is_some_and(|v| v.starts_with("ENC[AES256_GCM,")), "{doc}");
        // The real sops decrypts it with the cluster's own key, MAC checked, YAML as written...
        let file = s.out().join(cluster).join(DB);
        let plain = sops_decrypt(key, &file, &[]);
        assert!(plain.status.success(), "sops --decrypt {cluster}: {}", text(&plain.stderr));
        let plain = yaml(&plain.stdout);
        assert_eq!(plain["data"], serde_json::json!({"password": CANARY_B64}));
        assert_eq!(
            plain["stringData"],
            serde_json::json!({"user": "admin", "dsn": "postgres://admin@db:5432/shop"}),
            "the repository's Secret"
        );
        assert_eq!(plain["metadata"]["annotations"]["rotation"], "2");
        assert_eq!(plain["immutable"], false);
        assert!(plain.get("sops").is_none());
        // ... and as Flux's kustomize-controller reads it: the object as JSON (keys sorted).
        let json = s.dir.path().join(format!("{cluster}.json"));
        std::fs::write(&json, serde_json::to_vec(&doc).expect("json")).expect("write");
        let flux = sops_decrypt(key, &json, &["--input-type", "json", "--output-type", "json"]);
        assert!(flux.status.success(), "sops --decrypt (JSON, as Flux): {}", text(&flux.stderr));
        let flux: serde_json::Value = serde_json::from_slice(&flux.stdout).expect("json");
        assert_eq!(flux["data"]["password"], CANARY_B64);
        assert_eq!(flux["stringData"]["user"], "admin");
    }
    // The other cluster's key opens nothing.
    let wrong = sops_decrypt(&keys.b.0, &s.out().join("eu-west-a").join(DB), &[]);
    assert!(!wrong.status.success(), "eu-west-b's key decrypted eu-west-a's Secret");
    // The Secret propagateDeps pulls in is encrypted too.
    let dep = get("eu-west-a", APP_SECRET);
    assert!(!text(&dep).contains(CANARY), "{}", text(&dep));
    let plain = sops_decrypt(&keys.a.0, &s.out().join("eu-west-a").join(APP_SECRET), &[]);
    assert!(plain.status.success(), "{}", text(&plain.stderr));
    assert_eq!(yaml(&plain.stdout)["stringData"]["token"], format!("{CANARY}-token"));
    // Kustomize (what Flux runs first) still builds the directory, `sops` block and all.
    let built =
        Command::new(tools::kubectl()).arg("kustomize").arg(s.out().join("eu-west-a")).output().expect("kubectl");
    assert!(built.status.success(), "kubectl kustomize: {}", text(&built.stderr));
    assert!(text(&built.stdout).contains("encrypted_regex"), "{}", text(&built.stdout));
    assert!(!text(&built.stdout).contains(CANARY));
}

#[test]
fn the_ciphertext_is_kept_until_the_secret_or_its_recipient_changes() {
    let Some(keygen) = tools::age_keygen() else { return };
    let (s, keys, config) = setup(&keygen);
    assert!(render(&s, &config).status.success());
    let first = tree(&s.out());
    let secret = |files: &std::collections::BTreeMap<String, Vec<u8>>, cluster: &str| {
        files.get(&format!("{cluster}/{DB}")).cloned().expect("written")
    };
    // Another process, nothing changed: the same bytes (no churn in git).
    assert!(render(&s, &config).status.success());
    assert_eq!(tree(&s.out()), first, "a second render rewrote files");
    // The Secret's policy changes (decided and rendered again), its content does not.
    let edited = repository(CANARY_B64).replacen(
        "metadata: {name: db, namespace: shop}\nspec:\n",
        "metadata: {name: db, namespace: shop, labels: {team: data}}\nspec:\n",
        1,
    );
    s.write("apps/secrets.yaml", &edited);
    let out = render(&s, &config);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let second = tree(&s.out());
    assert_eq!(secret(&second, "eu-west-a"), secret(&first, "eu-west-a"), "re-encrypted an unchanged Secret");
    // A new value: new ciphertext, which decrypts to it.
    s.write("apps/secrets.yaml", &edited.replace(CANARY_B64, "bmV3LXBhc3N3b3Jk"));
    assert!(render(&s, &config).status.success());
    let third = tree(&s.out());
    assert_ne!(secret(&third, "eu-west-a"), secret(&second, "eu-west-a"));
    let plain = sops_decrypt(&keys.a.0, &s.out().join("eu-west-a").join(DB), &[]);
    assert_eq!(yaml(&plain.stdout)["data"]["password"], "bmV3LXBhc3N3b3Jk", "{}", text(&plain.stderr));
    // A new recipient for eu-west-a: encrypted again, for it only.
    let other = age_key(s.dir.path(), "a2", &keygen);
    let rotated = config.replace(&keys.a.1, &other.1);
    assert!(render(&s, &rotated).status.success());
    let fourth = tree(&s.out());
    assert_ne!(secret(&fourth, "eu-west-a"), secret(&third, "eu-west-a"));
    assert_eq!(secret(&fourth, "eu-west-b"), secret(&third, "eu-west-b"), "eu-west-b's recipient did not change");
    assert!(sops_decrypt(&other.0, &s.out().join("eu-west-a").join(DB), &[]).status.success());
    assert!(!sops_decrypt(&keys.a.0, &s.out().join("eu-west-a").join(DB), &[]).status.success());
}

#[test]
fn no_secret_value_in_the_store_the_summary_the_history_or_a_plan() {
    let Some(keygen) = tools::age_keygen() else { return };
    let (s, _keys, config) = setup(&keygen);
    assert!(render(&s, &config).status.success());
    // A second pass with a changed value stores a replay pass with the repository's files.
    s.write("apps/secrets.yaml", &repository("bmV3LXBhc3N3b3Jk").replace("admin", "admin2"));
    let out = render(&s, &config);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let needles = [CANARY, CANARY_B64, "bmV3LXBhc3N3b3Jk", "postgres://admin"];
    assert_absent("the store", &all_bytes(&s.state()), &needles);
    let summary: Vec<(String, Vec<u8>)> =
        all_bytes(&s.out()).into_iter().filter(|(p, _)| p.starts_with(".fedsched/")).collect();
    assert!(!summary.is_empty(), "the summary was written");
    assert_absent("the summary", &summary, &needles);
    assert_absent("the output", &all_bytes(&s.out()), &needles);
    let cfg = s.dir.path().join("fedsched.toml");
    let cfg = cfg.to_str().expect("utf-8");
    for args in [
        vec!["history", "Secret/shop/db", "-o", "json"],
        vec!["explain", "Secret/shop/db", "-o", "json"],
        vec!["replay", "--all", "-o", "json"],
    ] {
        let out = s.cmd(args[0], &[&args[1..], &["--config", cfg]].concat());
        let all = [out.stdout.clone(), out.stderr.clone()].concat();
        assert_absent(&args.join(" "), &[(args.join(" "), all)], &needles);
    }
    // A plan's diff (a pull request's comment) names the Secret's file, not its content.
    s.write("apps/secrets.yaml", &repository(CANARY_B64));
    let out = s.cmd("plan", &["--local", "--diff", "--config", cfg, "--out", s.out().to_str().expect("utf-8")]);
    let all = [out.stdout.clone(), out.stderr.clone()].concat();
    assert!(text(&all).contains("core_secret_db.yaml"), "{}", text(&all));
    assert_absent("plan --diff", &[("plan".into(), all)], &needles);
}

#[test]
fn without_a_mode_no_secret_is_written_and_check_and_every_pass_say_what_to_choose() {
    let s = Scratch::with_demo();
    s.write("apps/secrets.yaml", &repository(CANARY_B64));
    let check = check(&s, None);
    assert_eq!(check.status.code(), Some(1), "{}", text(&check.stdout));
    let said = text(&check.stdout);
    for what in ["Secret/shop/db", "Secret/shop/app-secret", "mode = \"sops\"", "\"omit\"", "\"plain\""] {
        assert!(said.contains(what), "check does not say {what:?}: {said}");
    }
    assert!(said.contains("apps/secrets.yaml: document 2"), "names file and document: {said}");
    for pass in 0..2 {
        let out = s.render_with(&[], &[]);
        let err = text(&out.stderr);
        assert!(
            err.contains("Secret(s) not written") && err.contains("Secret/shop/db on eu-west-a, eu-west-b"),
            "pass {pass}: {err}"
        );
        assert!(err.contains("mode = \\\"sops\\\"") || err.contains("mode = \"sops\""), "{err}");
    }
    let files = tree(&s.out());
    assert!(files.keys().any(|k| k.ends_with("apps_deployment_app.yaml")), "other workloads are published");
    assert!(!files.keys().any(|k| k.contains("core_secret_")), "a Secret was written: {:?}", files.keys());
    assert_absent("the output", &all_bytes(&s.out()), &[CANARY, CANARY_B64]);
}

#[test]
fn omit_leaves_secrets_out_and_plain_is_an_opt_in_warned_at_every_pass() {
    let s = Scratch::with_demo();
    s.write("apps/secrets.yaml", &repository(CANARY_B64));
    let out = render(&s, "[secrets]\nmode = \"omit\"\n");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let files = tree(&s.out());
    assert!(!files.keys().any(|k| k.contains("core_secret_")), "{:?}", files.keys());
    assert!(files.contains_key("eu-west-a/shop/apps_deployment_app.yaml"));
    let cfg = s.dir.path().join("fedsched.toml");
    let check = check(&s, Some(&cfg));
    assert!(check.status.success(), "{}", text(&check.stdout));
    assert!(
        text(&check.stderr).contains("note:") && text(&check.stderr).contains("left out"),
        "{}",
        text(&check.stderr)
    );
    for pass in 0..2 {
        let out = render(&s, "[secrets]\nmode = \"plain\"\n");
        assert!(out.status.success());
        let err = text(&out.stderr);
        assert!(err.contains("in clear text") && err.contains("shop/db"), "pass {pass} did not warn: {err}");
    }
    let written = tree(&s.out());
    let db = written.get(&format!("eu-west-a/{DB}")).expect("plain writes it");
    assert!(text(db).contains(CANARY_B64));
}

#[test]
fn an_invalid_recipient_is_refused_naming_where_it_is() {
    let s = Scratch::with_demo();
    s.write("apps/secrets.yaml", &repository(CANARY_B64));
    let path = s.dir.path().join("fedsched.toml");
    std::fs::write(&path, "[secrets]\nmode = \"sops\"\n[clusters.eu-west-a]\nage_recipient = \"age1nope\"\n")
        .expect("cfg");
    let out = check(&s, Some(&path));
    assert_ne!(out.status.code(), Some(0));
    let all = text(&[out.stdout, out.stderr].concat());
    assert!(all.contains("clusters.eu-west-a.age_recipient"), "{all}");
    // On the Cluster object: check names the file, document and annotation.
    std::fs::write(&path, "[secrets]\nmode = \"sops\"\n").expect("cfg");
    let clusters = s.policies().join("clusters/eu-west.yaml");
    let t = std::fs::read_to_string(&clusters).expect("read");
    std::fs::write(
        &clusters,
        t.replacen(
            "  name: eu-west-b\n",
            "  name: eu-west-b\n  annotations: {fedsched.io/age-recipient: not-a-key}\n",
            1,
        ),
    )
    .expect("write");
    let out = check(&s, Some(&path));
    assert_eq!(out.status.code(), Some(1));
    let all = text(&[out.stdout, out.stderr].concat());
    assert!(
        all.contains("clusters/eu-west.yaml: document 2: metadata.annotations[fedsched.io/age-recipient]"),
        "{all}"
    );
    assert!(all.contains("eu-west-a"), "eu-west-a has no recipient: {all}");
}
