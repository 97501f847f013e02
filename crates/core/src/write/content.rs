//! Content as a request carries it: UTF-8 text, or any bytes in base64 (`encoding`), decoded
//! against the write size cap before anything else looks at it. [`Content`] is the pair every
//! tool that takes content flattens into its arguments, so the two fields, their defaults
//! and their decoding have one owner.

use crate::envelope::{Failure, Result};
use crate::write::intent::within_limit;
use base64::Engine;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How `content` is encoded in the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, JsonSchema)]
pub enum ContentEncoding {
    #[default]
    #[serde(rename = "utf-8", alias = "utf8")]
    Utf8,
    #[serde(rename = "base64")]
    Base64,
}

impl ContentEncoding {
    /// The encoding's name as the scratchpad's index records it (`utf-8`, `base64`).
    pub fn label(self) -> &'static str {
        match self {
            ContentEncoding::Utf8 => "utf-8",
            ContentEncoding::Base64 => "base64",
        }
    }
}

// `content` and `encoding`, flattened into the arguments of the tools that take content (no
// doc comment: a tool describes `content` in its own words, where it has any).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Content {
    pub content: String,
    #[serde(default)]
    pub encoding: ContentEncoding,
}

impl Content {
    /// The bytes `content` stands for, refused with `too_large` when they would exceed
    /// `limit` (checked before base64 is decoded, from its length) and with an encoding
    /// failure when the base64 is invalid.
    pub fn decode(self, limit: u64) -> Result<Vec<u8>> {
        let check = |n: usize| within_limit("content", n as u64, limit);
        match self.encoding {
            ContentEncoding::Utf8 => {
                check(self.content.len())?;
                Ok(self.content.into_bytes())
            }
            ContentEncoding::Base64 => {
                check(self.content.len() / 4 * 3)?;
                base64::engine::general_purpose::STANDARD
                    .decode(self.content.trim())
                    .map_err(|e| Failure::Encoding {
                        field: "content".into(),
                        reason: format!("invalid base64: {e}"),
                    })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn content(content: &str, encoding: ContentEncoding) -> Content {
        Content {
            content: content.into(),
            encoding,
        }
    }

    #[test]
    fn content_decodes_by_its_encoding_within_the_limit() {
        assert_eq!(
            content("héllo", ContentEncoding::Utf8).decode(64).unwrap(),
            "héllo".as_bytes()
        );
        assert_eq!(
            content(" AAEC\n", ContentEncoding::Base64)
                .decode(64)
                .unwrap(),
            [0, 1, 2]
        );
        let e = content("abcde", ContentEncoding::Utf8)
            .decode(4)
            .unwrap_err();
        assert!(matches!(e, Failure::TooLarge { bytes: 5, .. }), "{e:?}");
        let e = content(&"A".repeat(12), ContentEncoding::Base64)
            .decode(8)
            .unwrap_err();
        assert!(matches!(e, Failure::TooLarge { bytes: 9, .. }), "{e:?}");
        let e = content("not base64!", ContentEncoding::Base64)
            .decode(64)
            .unwrap_err();
        assert!(
            matches!(&e, Failure::Encoding { field, .. } if field == "content"),
            "{e:?}"
        );
    }
}
