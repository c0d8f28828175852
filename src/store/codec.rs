//! The versioned envelope around every value the store writes.
//!
//! Layout: `[0xF5 magic][codec u8][schema u16 big-endian][payload]`.
//!
//! - codec 1: bincode 2.0.1 with [`bincode::config::standard()`] (the one place that pins it is
//!   [`bincode_config`]);
//! - codec 2: JSON (records decoded with serde_json; blobs are the raw JSON bytes).
//!
//! The schema is the version of one record family ([`Versioned::SCHEMA`]). Decoding checks the
//! magic, the codec and the schema (an unknown schema is [`StoreError::Schema`], never a
//! misread) and that the payload was consumed entirely: bincode silently decodes a prefix of
//! bytes written by a newer struct, so a short read is an error too.
//!
//! Evolving a record: keep the old struct (`FooV1`), bump `SCHEMA`, and override
//! [`Versioned::decode_older`] to decode the old payload and convert it in memory. Enum variants
//! are encoded by index: append only, never reorder or remove.

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::StoreError;

/// First byte of every stored value.
pub const MAGIC: u8 = 0xF5;
/// Length of the envelope header.
pub const HEADER_LEN: usize = 4;

/// How the payload of an envelope is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Codec {
    /// bincode 2.0.1, `config::standard()` (varint integers, little endian).
    Bincode = 1,
    /// JSON.
    Json = 2,
}

impl Codec {
    fn from_byte(b: u8) -> Option<Codec> {
        match b {
            1 => Some(Codec::Bincode),
            2 => Some(Codec::Json),
            _ => None,
        }
    }
}

/// The bincode configuration of codec 1. Changing it changes the wire format: never do that
/// without a new codec number.
pub fn bincode_config() -> bincode::config::Configuration {
    bincode::config::standard()
}

/// Most bytes one decode may allocate for strings and byte vectors. bincode allocates a
/// length-prefixed string or byte vector before reading it, so a damaged length would otherwise
/// ask for exabytes and abort the process; with the limit it is [`StoreError::Decode`]. Reading
/// is unchanged: the largest record (a snapshot of thousands of nodes) holds a few MiB.
pub const DECODE_LIMIT: usize = 256 << 20;

/// A record family stored behind the envelope.
pub trait Versioned: Serialize + DeserializeOwned {
    /// Name used in error messages (`snapshot meta`, `history record`…).
    const WHAT: &'static str;
    /// The schema this binary writes.
    const SCHEMA: u16;

    /// Decodes a payload written with an older schema and converts it to the current form.
    /// `None` means the schema is unknown (the default: no older schema exists yet).
    fn decode_older(_schema: u16, _codec: Codec, _payload: &[u8]) -> Option<Result<Self, StoreError>> {
        None
    }
}

/// The parsed header of an envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub codec: Codec,
    pub schema: u16,
}

fn header(codec: Codec, schema: u16, payload_len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + payload_len);
    out.push(MAGIC);
    out.push(codec as u8);
    out.extend_from_slice(&schema.to_be_bytes());
    out
}

/// Splits an envelope into its header and payload, checking magic and codec.
pub fn open_envelope<'a>(what: &'static str, bytes: &'a [u8]) -> Result<(Header, &'a [u8]), StoreError> {
    if bytes.len() < HEADER_LEN {
        return Err(StoreError::ShortEnvelope { what, len: bytes.len() });
    }
    if bytes[0] != MAGIC {
        return Err(StoreError::BadMagic { what, found: bytes[0] });
    }
    let codec = Codec::from_byte(bytes[1]).ok_or(StoreError::UnknownCodec { what, codec: bytes[1] })?;
    let schema = u16::from_be_bytes([bytes[2], bytes[3]]);
    Ok((Header { codec, schema }, &bytes[HEADER_LEN..]))
}

/// Encodes a record with codec 1 (bincode) and its current schema.
pub fn encode<T: Versioned>(value: &T) -> Result<Vec<u8>, StoreError> {
    // The payload goes straight after the header (no second copy of a record's bytes).
    let mut out = header(Codec::Bincode, T::SCHEMA, 256);
    bincode::serde::encode_into_std_write(value, &mut out, bincode_config())
        .map_err(|source| StoreError::Encode { what: T::WHAT, source })?;
    Ok(out)
}

/// Encodes a record with codec 2 (JSON) and its current schema; for export and debugging.
pub fn encode_json<T: Versioned>(value: &T) -> Result<Vec<u8>, StoreError> {
    let payload = serde_json::to_vec(value).map_err(|source| StoreError::EncodeJson { what: T::WHAT, source })?;
    let mut out = header(Codec::Json, T::SCHEMA, payload.len());
    out.extend_from_slice(&payload);
    Ok(out)
}

/// Decodes an envelope written by [`encode`] or [`encode_json`].
pub fn decode<T: Versioned>(bytes: &[u8]) -> Result<T, StoreError> {
    let what = T::WHAT;
    let (h, payload) = open_envelope(what, bytes)?;
    if h.schema != T::SCHEMA {
        return match T::decode_older(h.schema, h.codec, payload) {
            Some(r) => r,
            None => Err(StoreError::Schema { what, found: h.schema, supported: T::SCHEMA }),
        };
    }
    decode_payload(what, h.codec, payload)
}

/// Decodes a payload of a known codec, requiring it to be consumed entirely.
pub fn decode_payload<T: DeserializeOwned>(what: &'static str, codec: Codec, payload: &[u8]) -> Result<T, StoreError> {
    match codec {
        Codec::Bincode => {
            let (value, consumed) =
                bincode::serde::decode_from_slice::<T, _>(payload, bincode_config().with_limit::<DECODE_LIMIT>())
                    .map_err(|e| match e {
                        bincode::error::DecodeError::UnexpectedEnd { additional } => {
                            StoreError::Truncated { what, len: payload.len(), additional }
                        }
                        source => StoreError::Decode { what, source },
                    })?;
            if consumed != payload.len() {
                return Err(StoreError::TrailingBytes { what, consumed, len: payload.len() });
            }
            Ok(value)
        }
        // serde_json rejects trailing characters itself.
        Codec::Json => serde_json::from_slice(payload).map_err(|source| {
            if source.is_eof() {
                StoreError::Truncated { what, len: payload.len(), additional: 0 }
            } else {
                StoreError::DecodeJson { what, source }
            }
        }),
    }
}

/// Schema of a blob envelope.
pub const BLOB_SCHEMA: u16 = 1;
const BLOB_WHAT: &str = "blob";

/// Wraps blob bytes: valid JSON is stored as-is (codec 2); anything else as a bincode byte
/// vector (codec 1), so that the codec byte never lies about the payload.
pub fn encode_blob(bytes: &[u8]) -> Result<Vec<u8>, StoreError> {
    let is_json = serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok();
    if is_json {
        let mut out = header(Codec::Json, BLOB_SCHEMA, bytes.len());
        out.extend_from_slice(bytes);
        Ok(out)
    } else {
        let payload = bincode::serde::encode_to_vec(bytes, bincode_config())
            .map_err(|source| StoreError::Encode { what: BLOB_WHAT, source })?;
        let mut out = header(Codec::Bincode, BLOB_SCHEMA, payload.len());
        out.extend_from_slice(&payload);
        Ok(out)
    }
}

/// Unwraps blob bytes written by [`encode_blob`].
pub fn decode_blob(stored: &[u8]) -> Result<Vec<u8>, StoreError> {
    let (h, payload) = open_envelope(BLOB_WHAT, stored)?;
    if h.schema != BLOB_SCHEMA {
        return Err(StoreError::Schema { what: BLOB_WHAT, found: h.schema, supported: BLOB_SCHEMA });
    }
    match h.codec {
        Codec::Json => Ok(payload.to_vec()),
        Codec::Bincode => decode_payload::<Vec<u8>>(BLOB_WHAT, Codec::Bincode, payload),
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    use super::*;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Rec {
        a: u64,
        b: String,
        c: Option<Vec<i32>>,
    }

    impl Versioned for Rec {
        const WHAT: &'static str = "test record";
        const SCHEMA: u16 = 3;
    }

    /// The same record one schema later, with a field appended.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct RecV4 {
        a: u64,
        b: String,
        c: Option<Vec<i32>>,
        d: u32,
    }

    impl Versioned for RecV4 {
        const WHAT: &'static str = "test record";
        const SCHEMA: u16 = 4;

        fn decode_older(schema: u16, codec: Codec, payload: &[u8]) -> Option<Result<Self, StoreError>> {
            (schema == 3).then(|| {
                decode_payload::<Rec>(Self::WHAT, codec, payload).map(|r| RecV4 { a: r.a, b: r.b, c: r.c, d: 0 })
            })
        }
    }

    fn rec() -> Rec {
        Rec { a: 300, b: "web".into(), c: Some(vec![-1, 2]) }
    }

    #[test]
    fn round_trip_both_codecs() {
        let bytes = encode(&rec()).unwrap();
        assert_eq!(&bytes[..4], &[0xF5, 1, 0, 3]);
        assert_eq!(decode::<Rec>(&bytes).unwrap(), rec());
        let json = encode_json(&rec()).unwrap();
        assert_eq!(&json[..4], &[0xF5, 2, 0, 3]);
        assert_eq!(decode::<Rec>(&json).unwrap(), rec());
    }

    #[test]
    fn rejects_wrong_magic_and_codec_and_short_header() {
        let mut bytes = encode(&rec()).unwrap();
        bytes[0] = 0x00;
        assert!(matches!(decode::<Rec>(&bytes), Err(StoreError::BadMagic { found: 0, .. })));
        bytes[0] = MAGIC;
        bytes[1] = 9;
        assert!(matches!(decode::<Rec>(&bytes), Err(StoreError::UnknownCodec { codec: 9, .. })));
        assert!(matches!(decode::<Rec>(&[0xF5, 1]), Err(StoreError::ShortEnvelope { len: 2, .. })));
    }

    #[test]
    fn rejects_unknown_schema() {
        let mut bytes = encode(&rec()).unwrap();
        bytes[2..4].copy_from_slice(&7u16.to_be_bytes());
        let err = decode::<Rec>(&bytes).unwrap_err();
        assert!(matches!(err, StoreError::Schema { found: 7, supported: 3, .. }), "{err}");
        // A newer record read by an older binary is a schema error, not a prefix read.
        let newer = encode(&RecV4 { a: 1, b: "x".into(), c: None, d: 5 }).unwrap();
        assert!(matches!(decode::<Rec>(&newer), Err(StoreError::Schema { found: 4, .. })));
    }

    #[test]
    fn older_schema_is_upgraded() {
        let old = encode(&rec()).unwrap();
        let up = decode::<RecV4>(&old).unwrap();
        assert_eq!(up, RecV4 { a: 300, b: "web".into(), c: Some(vec![-1, 2]), d: 0 });
    }

    #[test]
    fn rejects_trailing_bytes() {
        let mut bytes = encode(&rec()).unwrap();
        bytes.push(0);
        let err = decode::<Rec>(&bytes).unwrap_err();
        assert!(matches!(err, StoreError::TrailingBytes { .. }), "{err}");
        // Bytes of a newer struct mislabelled with the old schema: caught by consumption.
        let mut newer = encode(&RecV4 { a: 1, b: "x".into(), c: None, d: 5 }).unwrap();
        newer[2..4].copy_from_slice(&3u16.to_be_bytes());
        assert!(matches!(decode::<Rec>(&newer), Err(StoreError::TrailingBytes { .. })));
        let mut json = encode_json(&rec()).unwrap();
        json.extend_from_slice(b"{}");
        assert!(matches!(decode::<Rec>(&json), Err(StoreError::DecodeJson { .. })));
    }

    #[test]
    fn a_damaged_length_is_an_error_not_an_abort() {
        // `a` = 300 (varint 0xFB + u16), then `b`'s length: 2^63 as a varint u64 (0xFD + 8 bytes).
        let bytes = encode(&rec()).unwrap();
        assert_eq!(&bytes[HEADER_LEN..HEADER_LEN + 4], &[0xFB, 0x2C, 0x01, 3]);
        let mut damaged = bytes[..HEADER_LEN + 3].to_vec();
        damaged.push(0xFD);
        damaged.extend_from_slice(&(1u64 << 63).to_le_bytes());
        damaged.extend_from_slice(&bytes[HEADER_LEN + 4..]);
        let err = decode::<Rec>(&damaged).unwrap_err();
        assert!(matches!(err, StoreError::Decode { .. }), "{err}");
        // Just over the limit is refused too, at the limit's edge a length is only read.
        let mut over = bytes[..HEADER_LEN + 3].to_vec();
        over.push(0xFD);
        over.extend_from_slice(&(DECODE_LIMIT as u64 + 1).to_le_bytes());
        assert!(matches!(decode::<Rec>(&over), Err(StoreError::Decode { .. })));
    }

    #[test]
    fn rejects_truncated_payload() {
        let bytes = encode(&rec()).unwrap();
        for cut in HEADER_LEN..bytes.len() {
            let err = decode::<Rec>(&bytes[..cut]).unwrap_err();
            assert!(matches!(err, StoreError::Truncated { .. }), "cut at {cut}: {err}");
        }
        let json = encode_json(&rec()).unwrap();
        let err = decode::<Rec>(&json[..json.len() - 3]).unwrap_err();
        assert!(matches!(err, StoreError::Truncated { .. }), "{err}");
    }

    #[test]
    fn blobs_keep_bytes_exactly() {
        let json = br#"{"kind": "Deployment",  "spec": {}}"#;
        let stored = encode_blob(json).unwrap();
        assert_eq!(stored[1], Codec::Json as u8);
        assert_eq!(decode_blob(&stored).unwrap(), json.to_vec());
        let raw = b"\x00\xffnot json";
        let stored = encode_blob(raw).unwrap();
        assert_eq!(stored[1], Codec::Bincode as u8);
        assert_eq!(decode_blob(&stored).unwrap(), raw.to_vec());
    }
}
