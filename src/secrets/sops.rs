//! A Kubernetes Secret encrypted in SOPS's YAML format for one age recipient: what Flux's
//! kustomize-controller (`spec.decryption.provider: sops`) and `sops --decrypt` read.
//!
//! The format, as getsops/sops writes it (read in its `aes`, `sops.go` and `stores` packages):
//!
//! - a random 32-byte data key; each value under a key matching `encrypted_regex`
//!   (`^(data|stringData)$`: any key of its path named `data` or `stringData`) becomes
//!   `ENC[AES256_GCM,data:…,iv:…,tag:…,type:str]`: AES-256-GCM with a random 32-byte nonce and
//!   the value's path joined with `:` plus a trailing `:` (`data:password:`) as additional data
//!   (an empty string stays empty, a null stays null: sops encrypts neither);
//! - the MAC: SHA-512 over every non-null leaf of the document in walk order (map keys in
//!   document order, which is sorted here, as Flux's JSON form of the object is), upper-case
//!   hex, encrypted like a value with the `lastmodified` timestamp (RFC 3339, seconds, UTC) as
//!   additional data;
//! - the data key encrypted to the age recipient (an X25519 stanza, ASCII-armored) under
//!   `sops.age[].enc`;
//! - `sops.lastmodified`, `sops.mac`, `sops.encrypted_regex`, `sops.version`.
//!
//! Leaves are converted to bytes as sops's `ToBytes` does: strings as they are, integers in
//! decimal, booleans `True`/`False`, floats in the shortest decimal form without exponent.
//! Every value of a Secret fedsched writes is a string or a boolean (`immutable`); numbers are
//! handled the same way for completeness.

use aes_gcm::aead::consts::U32;
use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::aes::Aes256;
use aes_gcm::{AesGcm, Nonce};
use ring::rand::{SecureRandom, SystemRandom};
use serde_json::{Map, Value};

/// AES-256-GCM with sops's 32-byte nonces.
type Cipher = AesGcm<Aes256, U32>;

/// The `encrypted_regex` written: the data of a Secret, nothing else.
pub const ENCRYPTED_REGEX: &str = "^(data|stringData)$";
/// The sops version the files say wrote them (the format the tests decrypt with).
pub const SOPS_VERSION: &str = "3.11.0";

/// Why a Secret could not be encrypted.
#[derive(Debug, thiserror::Error)]
pub enum SopsError {
    #[error("the system's random number generator failed")]
    Random,
    #[error("AES-GCM encryption failed")]
    Cipher,
    #[error("age encryption failed: {0}")]
    Age(String),
    #[error("the object already has a `sops` field: it cannot be encrypted again")]
    AlreadyEncrypted,
    #[error("the object is not a mapping")]
    NotAnObject,
}

/// Whether a key of a value's path puts the value under encryption ([`ENCRYPTED_REGEX`]).
fn encrypted_key(key: &str) -> bool {
    key == "data" || key == "stringData"
}

/// `object` with its Secret data encrypted for `recipient` and the `sops` metadata added;
/// `lastmodified` is RFC 3339 in UTC with seconds (`2026-12-06T10:58:34Z`).
pub fn encrypt(object: &Value, recipient: &age::x25519::Recipient, lastmodified: &str) -> Result<Value, SopsError> {
    let Value::Object(map) = object else { return Err(SopsError::NotAnObject) };
    if map.contains_key("sops") {
        return Err(SopsError::AlreadyEncrypted);
    }
    let rng = SystemRandom::new();
    let mut data_key = [0u8; 32];
    rng.fill(&mut data_key).map_err(|_| SopsError::Random)?;
    let cipher = Cipher::new_from_slice(&data_key).map_err(|_| SopsError::Cipher)?;
    let mut walk = Walk { cipher: &cipher, rng: &rng, mac: ring::digest::Context::new(&ring::digest::SHA512) };
    let mut path = Vec::new();
    let mut out = walk.map(map, &mut path, false)?;
    let digest = walk.mac.finish();
    let mac_hex: String = digest.as_ref().iter().map(|b| format!("{b:02X}")).collect();
    let mac = seal(&cipher, &rng, mac_hex.as_bytes(), lastmodified.as_bytes(), "str")?;
    let enc = armored(recipient, &data_key)?;
    let mut age_key = Map::new();
    age_key.insert("recipient".into(), Value::String(recipient.to_string()));
    age_key.insert("enc".into(), Value::String(enc));
    let mut sops = Map::new();
    sops.insert("age".into(), Value::Array(vec![Value::Object(age_key)]));
    sops.insert("lastmodified".into(), Value::String(lastmodified.into()));
    sops.insert("mac".into(), Value::String(mac));
    sops.insert("encrypted_regex".into(), Value::String(ENCRYPTED_REGEX.into()));
    sops.insert("version".into(), Value::String(SOPS_VERSION.into()));
    out.insert("sops".into(), Value::Object(sops));
    Ok(Value::Object(out))
}

/// The data key encrypted to `recipient`, ASCII-armored (what sops's age key source writes).
fn armored(recipient: &age::x25519::Recipient, data_key: &[u8]) -> Result<String, SopsError> {
    use std::io::Write as _;
    let age_err = |e: &dyn std::fmt::Display| SopsError::Age(e.to_string());
    let encryptor =
        age::Encryptor::with_recipients(std::iter::once(recipient as &dyn age::Recipient)).map_err(|e| age_err(&e))?;
    let mut out = Vec::new();
    let armor =
        age::armor::ArmoredWriter::wrap_output(&mut out, age::armor::Format::AsciiArmor).map_err(|e| age_err(&e))?;
    let mut writer = encryptor.wrap_output(armor).map_err(|e| age_err(&e))?;
    writer.write_all(data_key).map_err(|e| age_err(&e))?;
    writer.finish().and_then(|armor| armor.finish()).map_err(|e| age_err(&e))?;
    String::from_utf8(out).map_err(|e| age_err(&e))
}

/// `ENC[AES256_GCM,data:…,iv:…,tag:…,type:…]` of `plain` with `aad`.
fn seal(cipher: &Cipher, rng: &SystemRandom, plain: &[u8], aad: &[u8], kind: &str) -> Result<String, SopsError> {
    use base64::Engine as _;
    let mut iv = [0u8; 32];
    rng.fill(&mut iv).map_err(|_| SopsError::Random)?;
    let sealed =
        cipher.encrypt(Nonce::<U32>::from_slice(&iv), Payload { msg: plain, aad }).map_err(|_| SopsError::Cipher)?;
    let (data, tag) = sealed.split_at(sealed.len().saturating_sub(16));
    let b64 = base64::engine::general_purpose::STANDARD;
    Ok(format!("ENC[AES256_GCM,data:{},iv:{},tag:{},type:{kind}]", b64.encode(data), b64.encode(iv), b64.encode(tag)))
}

/// A leaf as sops's `ToBytes` gives it, with its sops type (`None`: a null, which sops
/// neither hashes nor encrypts).
fn leaf_bytes(v: &Value) -> Option<(String, &'static str)> {
    match v {
        Value::String(s) => Some((s.clone(), "str")),
        Value::Bool(b) => Some((if *b { "True" } else { "False" }.to_string(), "bool")),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => Some((i.to_string(), "int")),
            (None, Some(u), _) => Some((u.to_string(), "int")),
            // Rust's shortest round-trip form never uses an exponent, as Go's 'f', -1.
            (None, None, Some(f)) => Some((f.to_string(), "float")),
            _ => None,
        },
        _ => None,
    }
}

/// The walk over the document: every leaf into the MAC, those under an encrypted key sealed.
struct Walk<'a> {
    cipher: &'a Cipher,
    rng: &'a SystemRandom,
    mac: ring::digest::Context,
}

impl Walk<'_> {
    fn map(
        &mut self,
        map: &Map<String, Value>,
        path: &mut Vec<String>,
        under: bool,
    ) -> Result<Map<String, Value>, SopsError> {
        let mut out = Map::new();
        for (k, v) in map {
            path.push(k.clone());
            let value = self.value(v, path, under || encrypted_key(k));
            path.pop();
            out.insert(k.clone(), value?);
        }
        Ok(out)
    }

    fn value(&mut self, v: &Value, path: &mut Vec<String>, encrypted: bool) -> Result<Value, SopsError> {
        match v {
            Value::Object(m) => Ok(Value::Object(self.map(m, path, encrypted)?)),
            // sops walks a sequence's items with the sequence's own path.
            Value::Array(items) => {
                items.iter().map(|i| self.value(i, path, encrypted)).collect::<Result<_, _>>().map(Value::Array)
            }
            leaf => {
                let Some((bytes, kind)) = leaf_bytes(leaf) else { return Ok(Value::Null) };
                self.mac.update(bytes.as_bytes());
                if !encrypted || bytes.is_empty() && kind == "str" {
                    return Ok(leaf.clone());
                }
                let aad = format!("{}:", path.join(":"));
                Ok(Value::String(seal(self.cipher, self.rng, bytes.as_bytes(), aad.as_bytes(), kind)?))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recipient() -> age::x25519::Recipient {
        age::x25519::Identity::generate().to_public()
    }

    /// Decrypts one `ENC[…]` value with the data key (the inverse of [`seal`], for the tests).
    fn open(key: &[u8], enc: &str, aad: &str) -> String {
        use base64::Engine as _;
        let inner = enc.strip_prefix("ENC[AES256_GCM,").and_then(|s| s.strip_suffix(']')).expect("sops value");
        let part = |name: &str| {
            let p = inner.split(',').find_map(|p| p.strip_prefix(&format!("{name}:"))).expect("part");
            base64::engine::general_purpose::STANDARD.decode(p).expect("base64")
        };
        let mut sealed = part("data");
        sealed.extend(part("tag"));
        let cipher = Cipher::new_from_slice(key).expect("key");
        let plain = cipher
            .decrypt(Nonce::<U32>::from_slice(&part("iv")), Payload { msg: &sealed, aad: aad.as_bytes() })
            .expect("decrypt");
        String::from_utf8(plain).expect("utf-8")
    }

    #[test]
    fn only_the_data_is_encrypted_and_each_value_is_bound_to_its_path() {
        let identity = age::x25519::Identity::generate();
        let secret = serde_json::json!({
            "apiVersion": "v1", "kind": "Secret", "immutable": true,
            "metadata": {"name": "db", "namespace": "shop", "labels": {"data": "x"}},
            "data": {"password": "aHVudGVyMg==", "empty": ""},
            "stringData": {"user": "admin"},
            "type": "Opaque",
        });
        let enc = encrypt(&secret, &identity.to_public(), "2026-12-06T10:58:34Z").expect("encrypt");
        assert_eq!(enc["metadata"]["name"], "db");
        assert_eq!(enc["immutable"], true);
        assert_eq!(enc["data"]["empty"], "", "sops leaves an empty string as it is");
        // A key named `data` anywhere in the path is encrypted, as sops's regex does.
        assert!(enc["metadata"]["labels"]["data"].as_str().is_some_and(|s| s.starts_with("ENC[")));
        // The data key is in the armored age file; unwrap it and open each value.
        let armored = enc["sops"]["age"][0]["enc"].as_str().expect("enc");
        let reader = age::armor::ArmoredReader::new(armored.as_bytes());
        let key = age::decrypt(&identity, &{
            let mut v = Vec::new();
            std::io::Read::read_to_end(&mut { reader }, &mut v).expect("armor");
            v
        })
        .expect("age");
        assert_eq!(key.len(), 32);
        let password = enc["data"]["password"].as_str().expect("str");
        assert_eq!(open(&key, password, "data:password:"), "aHVudGVyMg==");
        assert_eq!(open(&key, enc["stringData"]["user"].as_str().expect("str"), "stringData:user:"), "admin");
        let mac = open(&key, enc["sops"]["mac"].as_str().expect("mac"), "2026-12-06T10:58:34Z");
        assert_eq!(mac.len(), 128, "SHA-512 in hex");
        assert!(encrypt(&enc, &recipient(), "2026-12-06T10:58:34Z").is_err(), "encrypted twice");
    }
}
