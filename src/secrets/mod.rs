//! What a Kubernetes Secret becomes in the output: a git repository is read by far more
//! people than a Karmada API server, so a Secret's data is never written in clear text unless
//! `[secrets] mode = "plain"` asks for it.
//!
//! - `mode = "sops"`: each cluster's file is encrypted with SOPS ([`sops`]) for the cluster's
//!   age recipient (`[clusters.NAME] age_recipient`, else the Cluster object's annotation
//!   [`ANNOTATION_AGE_RECIPIENT`]), the format Flux's kustomize-controller decrypts. SOPS's
//!   values carry random IVs, so every encryption is new bytes: [`SealedFiles`] keeps the
//!   published ciphertext while the clear-text manifest and the recipient are unchanged (an
//!   HMAC fingerprint per (cluster, path), kept in the store with its key).
//! - `mode = "omit"`: no file (the Secret is provisioned another way: External Secrets, Sealed
//!   Secrets); the placement is still decided and recorded.
//! - `mode = "plain"`: the manifest as any other, warned at every pass.
//! - no mode: a Secret that would be written is a render failure for that cluster (the
//!   previous file, if any, is kept; nothing new in clear text), and `check` fails naming it.
//!
//! The store never holds a Secret's data: the template blob and the repository file a replay
//! reads are stored with the values replaced ([`redact`], [`redact_source`]), and the parse
//! cache does not persist files with Secrets (`policy::load::persist`).
//!
//! # In detail
//!
//! What a Secret becomes in the output (`[secrets] mode`): `sops.rs` (a Secret SOPS-encrypted for
//! one age recipient, the format Flux decrypts: AES-256-GCM per value with its path as additional
//! data, the MAC, the data key wrapped by the `age` crate), `mod.rs` (the recipients from the
//! config and the Cluster objects, `SealedFiles`: the ciphertext kept while an HMAC fingerprint of
//! recipient and clear text is unchanged — the fingerprints and their key in the store's `sealed`
//! tree —, `redact`/`redact_source` for what the store keeps of a Secret). The decide stage's
//! render batch calls it per (Secret, cluster).

pub mod sops;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use crate::policy::{ObjectKey, PolicySet};
use crate::util::hash::fnv1a64;

/// The Cluster object's annotation naming the age recipient its Secrets are encrypted for.
pub const ANNOTATION_AGE_RECIPIENT: &str = "fedsched.io/age-recipient";

/// What replaces a Secret's value in what fedsched stores.
pub const REDACTED: &str = "<redacted by fedsched>";

/// `[secrets] mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Sops,
    Omit,
    Plain,
}

/// How a pass writes Secrets: the mode (`None`: not chosen) and the recipients the config
/// names (`[clusters.NAME] age_recipient`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SecretsSettings {
    pub mode: Option<Mode>,
    pub recipients: BTreeMap<String, String>,
}

/// Whether `key` is a core/v1 Secret.
pub fn is_secret(key: &ObjectKey) -> bool {
    key.api_version == "v1" && key.kind == "Secret"
}

/// Whether a path of a cluster directory is a Secret's file ([`crate::render::object_path`]:
/// `<namespace>/core_secret_<name>.yaml`; names have no `_`).
pub fn is_secret_path(rel: &str) -> bool {
    rel.rsplit('/').next().is_some_and(|f| f.starts_with("core_secret_"))
}

/// The message of a Secret that is not written because no mode was chosen.
pub fn unset_message() -> String {
    "a Secret's data is not written in clear text: set [secrets] mode = \"sops\" (encrypted for each \
     cluster's age recipient, decrypted by Flux), \"omit\" (provisioned another way: External Secrets, \
     Sealed Secrets) or \"plain\" (clear text, warned at every pass)"
        .to_string()
}

/// Each cluster's age recipient: from the config, else from its Cluster object's annotation.
#[derive(Clone, Default)]
pub struct Recipients {
    by_cluster: BTreeMap<String, Result<(String, age::x25519::Recipient), String>>,
    /// Clusters whose config and annotation name different recipients (the config's is used).
    pub conflicts: Vec<String>,
    /// Digest of the mode and every recipient: part of a Secret's decision key.
    pub digest: u64,
}

impl Recipients {
    /// The recipients of `settings` and `set`'s Cluster objects, each parsed (an invalid one is
    /// an error for that cluster, naming where it came from).
    pub fn resolve(settings: &SecretsSettings, set: &PolicySet) -> Self {
        let mut named: BTreeMap<String, (String, String)> = BTreeMap::new();
        let mut conflicts = Vec::new();
        for c in set.clusters.iter() {
            if let Some(r) = c.meta.annotations.get(ANNOTATION_AGE_RECIPIENT) {
                let from = format!("{}: metadata.annotations[{ANNOTATION_AGE_RECIPIENT}]", c.source);
                named.insert(c.meta.name.clone(), (r.trim().to_string(), from));
            }
        }
        for (cluster, r) in &settings.recipients {
            let from = format!("[clusters.{cluster}] age_recipient");
            if let Some((old, _)) = named.insert(cluster.clone(), (r.trim().to_string(), from))
                && old != r.trim()
            {
                conflicts.push(cluster.clone());
            }
        }
        let digest = fnv1a64(format!("{:?} {named:?}", settings.mode).as_bytes());
        let by_cluster = named
            .into_iter()
            .map(|(cluster, (r, from))| {
                let parsed = r
                    .parse::<age::x25519::Recipient>()
                    .map(|p| (r.clone(), p))
                    .map_err(|e| format!("{from}: {r:?} is not an age X25519 recipient (age1…): {e}"));
                (cluster, parsed)
            })
            .collect();
        Recipients { by_cluster, conflicts, digest }
    }

    /// The recipient of `cluster`, or why there is none.
    pub fn of(&self, cluster: &str) -> Result<&(String, age::x25519::Recipient), String> {
        match self.by_cluster.get(cluster) {
            Some(Ok(r)) => Ok(r),
            Some(Err(e)) => Err(e.clone()),
            None => Err(format!(
                "no age recipient for cluster {cluster}: set [clusters.{cluster}] age_recipient in the config or \
                 the annotation {ANNOTATION_AGE_RECIPIENT} on its Cluster object"
            )),
        }
    }
}

/// `object` with every value under a `data` or `stringData` key replaced by [`REDACTED`]
/// (what the store keeps of a Secret).
pub fn redact(object: &Value) -> Value {
    fn walk(v: &Value, under: bool) -> Value {
        match v {
            Value::Object(m) => Value::Object(
                m.iter().map(|(k, v)| (k.clone(), walk(v, under || k == "data" || k == "stringData"))).collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(|i| walk(i, under)).collect()),
            Value::Null => Value::Null,
            _ if under => Value::String(REDACTED.into()),
            other => other.clone(),
        }
    }
    walk(object, false)
}

/// Whether a parsed document is a core/v1 Secret.
pub fn is_secret_document(v: &Value) -> bool {
    v.get("apiVersion").and_then(Value::as_str) == Some("v1") && v.get("kind").and_then(Value::as_str) == Some("Secret")
}

/// A repository file's text with the data of its Secret documents replaced ([`redact`]; the
/// other documents as they are, each keeping its number), or `None` when it has no Secret.
pub fn redact_source(text: &str) -> Option<String> {
    use crate::policy::load::{parse_document, split_documents};
    let docs = split_documents(text);
    let mut any = false;
    let mut out = String::with_capacity(text.len());
    for (i, doc) in docs.iter().enumerate() {
        let parsed = parse_document(doc).ok().filter(is_secret_document);
        if i > 0 {
            out.push_str("---\n");
        }
        match parsed {
            Some(secret) => {
                any = true;
                out.push_str(&crate::render::yaml::to_yaml(&redact(&secret)));
            }
            // An empty chunk (this `---` before the document's own marker) gets no number.
            None => {
                out.push_str(&doc.text);
                out.push('\n');
            }
        }
    }
    any.then_some(out)
}

/// One Secret file this process or an earlier one encrypted: the fingerprint of what was
/// encrypted, the encrypted file's content hash, and its text when this process holds it.
#[derive(Debug, Clone)]
pub struct Sealed {
    pub fingerprint: [u8; 32],
    pub hash: u64,
    pub text: Option<Arc<str>>,
}

/// The Secret files published encrypted, by (cluster, path), and the key of their
/// fingerprints (the store's, [`crate::store::Store::sealing_key`]).
#[derive(Clone, Default)]
pub struct SealedFiles {
    key: Option<ring::hmac::Key>,
    files: HashMap<(String, String), Sealed>,
}

impl SealedFiles {
    /// Over the store's key and entries.
    pub fn new(key: [u8; 32], entries: Vec<crate::store::SealedEntry>) -> Self {
        let files = entries
            .into_iter()
            .map(|(at, (fingerprint, hash))| (at, Sealed { fingerprint, hash, text: None }))
            .collect();
        SealedFiles { key: Some(ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &key)), files }
    }

    /// HMAC-SHA256 of the recipient and the clear-text manifest (never stored itself).
    pub fn fingerprint(&self, recipient: &str, plain: &[u8]) -> [u8; 32] {
        let mut out = [0u8; 32];
        if let Some(key) = &self.key {
            let mut ctx = ring::hmac::Context::with_key(key);
            ctx.update(recipient.as_bytes());
            ctx.update(&[0]);
            ctx.update(plain);
            out.copy_from_slice(ctx.sign().as_ref());
        }
        out
    }

    /// The encrypted text of (`cluster`, `path`) when it was made from the same fingerprint:
    /// held in memory, or read from `output_dir` and checked against its content hash.
    pub fn reusable(&self, cluster: &str, path: &str, fingerprint: &[u8; 32], output_dir: &Path) -> Option<Arc<str>> {
        /// Larger files are not Secrets fedsched wrote (the API server limits a Secret to 1 MiB).
        const MAX_BYTES: u64 = 4 << 20;
        let sealed = self.files.get(&(cluster.to_string(), path.to_string()))?;
        if self.key.is_none() || sealed.fingerprint != *fingerprint {
            return None;
        }
        if let Some(text) = &sealed.text {
            return Some(Arc::clone(text));
        }
        let file = output_dir.join(cluster).join(path);
        let mut f = crate::util::stat::open_untouched(&file, false).ok()?;
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut std::io::Read::take(&mut f, MAX_BYTES), &mut bytes).ok()?;
        (fnv1a64(&bytes) == sealed.hash).then(|| String::from_utf8(bytes).ok().map(Arc::from)).flatten()
    }

    /// Whether the store's key and entries were read ([`SealedFiles::new`]).
    pub fn is_loaded(&self) -> bool {
        self.key.is_some()
    }

    /// Notes what was published (or kept) for (`cluster`, `path`).
    pub fn insert(&mut self, cluster: String, path: String, sealed: Sealed) {
        self.files.insert((cluster, path), sealed);
    }

    /// Whether (`cluster`, `path`) has an entry.
    pub fn contains(&self, cluster: &str, path: &str) -> bool {
        self.files.contains_key(&(cluster.to_string(), path.to_string()))
    }
}

/// What a pass needs to write Secrets: the mode, the recipients, the encrypted files so far.
pub struct SecretsPass<'a> {
    pub mode: Option<Mode>,
    pub recipients: &'a Recipients,
    pub sealed: &'a SealedFiles,
    pub output_dir: &'a Path,
    /// The pass's time as sops's `lastmodified` (RFC 3339, seconds, UTC).
    pub lastmodified: String,
}

/// What a Secret's file is on one cluster.
pub enum SecretFile {
    /// Written with this content (`sealed`: a new or kept encryption to note).
    Write { content: String, sealed: Option<Sealed> },
    /// Not written (`[secrets] mode = "omit"`).
    Omit,
}

impl SecretsPass<'_> {
    /// The pass's time in sops's form.
    pub fn lastmodified(now_ms: u64) -> String {
        humantime::format_rfc3339_seconds(std::time::UNIX_EPOCH + std::time::Duration::from_millis(now_ms)).to_string()
    }

    /// The file of a Secret whose rendered manifest is `manifest` (and `plain` its clear-text
    /// file) on `cluster` at `path`; `Err`: why it is not written there (a render failure).
    pub fn file(&self, cluster: &str, path: &str, manifest: &Value, plain: String) -> Result<SecretFile, String> {
        match self.mode {
            None => Err(unset_message()),
            Some(Mode::Omit) => Ok(SecretFile::Omit),
            Some(Mode::Plain) => Ok(SecretFile::Write { content: plain, sealed: None }),
            Some(Mode::Sops) => {
                let (name, recipient) = self.recipients.of(cluster)?;
                let fingerprint = self.sealed.fingerprint(name, plain.as_bytes());
                if let Some(text) = self.sealed.reusable(cluster, path, &fingerprint, self.output_dir) {
                    let hash = fnv1a64(text.as_bytes());
                    let sealed = Sealed { fingerprint, hash, text: Some(Arc::clone(&text)) };
                    return Ok(SecretFile::Write { content: text.to_string(), sealed: Some(sealed) });
                }
                let encrypted = sops::encrypt(manifest, recipient, &self.lastmodified)
                    .map_err(|e| format!("SOPS encryption failed: {e}"))?;
                let content =
                    format!("{}\n{}", crate::render::GENERATED_HEADER, crate::render::yaml::to_yaml(&encrypted));
                let sealed =
                    Sealed { fingerprint, hash: fnv1a64(content.as_bytes()), text: Some(Arc::from(content.as_str())) };
                Ok(SecretFile::Write { content, sealed: Some(sealed) })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redaction_keeps_the_shape_and_drops_every_value() {
        let s = serde_json::json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"},
            "data": {"password": "aHVudGVyMg=="}, "stringData": {"user": "admin", "n": null}, "type": "Opaque"});
        let r = redact(&s);
        assert_eq!(r["data"]["password"], REDACTED);
        assert_eq!(r["stringData"]["user"], REDACTED);
        assert_eq!(r["stringData"]["n"], Value::Null);
        assert_eq!(r["metadata"]["name"], "db");
        assert!(!serde_json::to_string(&r).expect("json").contains("admin"));
    }

    #[test]
    fn a_source_is_redacted_document_by_document() {
        let text = "# head\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: visible}\n---\n\
                    apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {password: canary-42}\n--- # c\n\
                    apiVersion: v1\nkind: Service\nmetadata: {name: b}\n";
        let out = redact_source(text).expect("has a Secret");
        assert!(!out.contains("canary-42"), "{out}");
        assert!(out.contains("visible"));
        let docs = crate::policy::load::split_documents(&out);
        assert_eq!(docs.len(), 3, "{out}");
        let kinds: Vec<String> = docs
            .iter()
            .map(|d| crate::policy::load::parse_document(d).expect("parses")["kind"].as_str().unwrap_or("").to_string())
            .collect();
        assert_eq!(kinds, ["ConfigMap", "Secret", "Service"]);
        assert!(redact_source("apiVersion: v1\nkind: ConfigMap\n").is_none());
    }
}
