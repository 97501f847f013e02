//! The hand-written scanners as a draft's score reports them: personal data (emails, US SSNs,
//! Luhn-checked cards of their issuers' lengths, mod-97 IBANs, phone numbers; `pii`), Discord
//! bot tokens without a key name (`tokens`) and binary hints (base64, hex, control bytes, data
//! URIs; `binary`). Numbers and tokens are generated, never written out.

use super::testing::{ALNUM, B64, HEX, Rng, URLSAFE, luhn_number, patterns, score, synth};
use super::*;

/// A Luhn-valid number of `len` digits under `prefix`, its free digits drawn from a PRNG
/// seeded with `len`.
fn luhn_complete(prefix: &str, len: usize) -> String {
    let mut r = Rng(len as u64);
    luhn_number(prefix, len, || (r.next() % 10) as u8)
}

fn iban(cc: &str, bban: &str) -> String {
    let rearranged = format!("{bban}{cc}00");
    let mut rem = 0u32;
    for c in rearranged.bytes() {
        let v = if c.is_ascii_digit() {
            u32::from(c - b'0')
        } else {
            u32::from(c - b'A') + 10
        };
        rem = if v >= 10 {
            (rem * 100 + v) % 97
        } else {
            (rem * 10 + v) % 97
        };
    }
    format!("{cc}{:02}{bban}", 98 - rem)
}

// ---- PII ----

#[test]
fn personal_email_is_low_and_example_domain_is_not_a_finding() {
    let r = score("contact: jane.doe@acme-mail.io\n");
    assert_eq!(r.verdict, Verdict::Low);
    assert_eq!(r.detected_patterns[0].pattern, "email_address");
    assert!(patterns("see alice@example.com and bob@example.org\n").is_empty());
}

#[test]
fn git_author_lines_are_at_most_low() {
    let r = score("Author: Jane Doe <jane@acme-mail.io>\nSigned-off-by: Bob <bob@corp-mail.net>\n");
    assert!(r.verdict <= Verdict::Low);
}

#[test]
fn ssn_of_valid_shape_is_medium() {
    let r = score("employee ssn: 219-45-7731\n");
    assert_eq!(r.detected_patterns[0].pattern, "us_ssn");
    assert_eq!(r.verdict, Verdict::Medium);
}

#[test]
fn ssn_with_spaces_or_dots_is_found_and_mixed_or_invalid_is_not() {
    for text in ["| Jane Roe | 219 45 7731 | payroll |", "SSN: 219.45.7731"] {
        let r = score(text);
        assert_eq!(patterns(text), ["us_ssn"], "{text}");
        assert_eq!(r.verdict, Verdict::Medium, "{text}");
    }
    for text in [
        "id 219 45-7731 x",
        "SSN: 000 45 7731",
        "v 666.45.7731",
        "n 219 00 7731",
    ] {
        assert!(
            !patterns(text).contains(&"us_ssn".to_string()),
            "{text}: {:?}",
            patterns(text)
        );
    }
}

#[test]
fn luhn_valid_card_is_found_and_invalid_is_not() {
    let card = luhn_complete("4", 16);
    assert_eq!(
        patterns(&format!("card {card}\n")),
        vec!["credit_card_number"]
    );
    let mut bad = card.into_bytes();
    bad[15] = if bad[15] == b'9' { b'0' } else { bad[15] + 1 };
    assert!(patterns(&format!("card {}\n", String::from_utf8_lossy(&bad))).is_empty());
}

#[test]
fn a_luhn_valid_number_of_a_length_its_issuer_never_uses_is_not_a_card() {
    // integer constants in code: a Mastercard prefix with 19 digits, a Visa prefix with 15 or 17
    for (prefix, len) in [("55", 19), ("52", 17), ("4", 15), ("4", 17), ("37", 16)] {
        let n = luhn_complete(prefix, len);
        assert!(
            patterns(&format!("pub const MAGIC: u64 = {n};\n")).is_empty(),
            "{prefix} x {len}"
        );
    }
    // the lengths each issuer does use are still cards
    for (prefix, len) in [
        ("4", 13),
        ("4", 19),
        ("2221", 16),
        ("34", 15),
        ("6011", 19),
        ("36", 14),
    ] {
        let n = luhn_complete(prefix, len);
        assert_eq!(
            patterns(&format!("card {n}\n")),
            vec!["credit_card_number"],
            "{prefix} x {len}"
        );
    }
}

#[test]
fn grouped_card_number_is_found() {
    let c = luhn_complete("51", 16);
    let grouped = format!("{} {} {} {}", &c[0..4], &c[4..8], &c[8..12], &c[12..16]);
    assert_eq!(patterns(&grouped), vec!["credit_card_number"]);
}

#[test]
fn checksum_valid_iban_is_found_and_invalid_is_not() {
    let good = iban("DE", "370400440532013000");
    assert_eq!(patterns(&format!("IBAN: {good}\n")), vec!["iban"]);
    let bad = good.replace("0532", "0533");
    assert!(patterns(&format!("IBAN: {bad}\n")).is_empty());
}

#[test]
fn phone_number_is_low() {
    let r = score("call +44 20 7946 0018 today\n");
    assert_eq!(r.detected_patterns[0].pattern, "phone_number");
    assert_eq!(r.verdict, Verdict::Low);
}

/// A Discord bot token: a user id (digits) in unpadded base64, 6 characters, 27-38 characters.
fn discord_token(r: &mut Rng, id_digits: usize, tail: usize) -> String {
    use base64::Engine;
    let id = format!(
        "{}{}",
        1 + r.next() % 9,
        r.chars(b"0123456789", id_digits - 1)
    );
    let head = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(id);
    format!("{head}.{}.{}", r.chars(URLSAFE, 6), r.chars(URLSAFE, tail))
}

#[test]
fn discord_bot_tokens_without_a_key_name_are_found() {
    let mut r = Rng(0x0d15_c0bd);
    for (digits, tail) in [(17, 27), (18, 38), (19, 32), (18, 27)] {
        let t = discord_token(&mut r, digits, tail);
        for text in [
            format!("client.run('{t}')"),
            format!("The bot token is {t}, keep it out of git."),
            format!("DISCORD={t}"),
        ] {
            let rep = score(&text);
            let f = rep
                .detected_patterns
                .iter()
                .find(|f| f.pattern == "discord_bot_token")
                .unwrap_or_else(|| panic!("{text}: {:?}", rep.detected_patterns));
            assert_eq!(&text[f.span()], t);
            assert_eq!(rep.verdict, Verdict::Medium, "{text}");
        }
    }
    // the same shape whose first segment is not a user id, or with a wrong middle, is not one
    let not_id = format!(
        "M{}.{}.{}",
        r.chars(ALNUM, 23),
        r.chars(URLSAFE, 6),
        r.chars(URLSAFE, 30)
    );
    let t = discord_token(&mut r, 18, 30);
    let (head, rest) = t.split_once('.').unwrap();
    let long_mid = format!("{head}.x{rest}");
    let glued = format!("x{t}");
    for text in [not_id, long_mid, glued] {
        assert!(
            !patterns(&text).contains(&"discord_bot_token".to_string()),
            "{text}"
        );
    }
}

// ---- binary hints ----

#[test]
fn long_base64_run_is_a_binary_hint() {
    let r = score(&format!("blob = {}\n", synth("", B64, 400)));
    assert_eq!(
        r.detected_patterns
            .iter()
            .map(|f| f.pattern.as_str())
            .collect::<Vec<_>>(),
        vec!["base64_blob"]
    );
    assert_eq!(r.verdict, Verdict::Low);
    assert!(r.suggested_actions.iter().any(|a| a.action == "split"));
}

#[test]
fn base64_wrapped_at_64_and_76_columns_is_a_binary_hint() {
    for width in [64, 76] {
        let body = synth("", B64, width * 6 + 10);
        let wrapped: Vec<&str> = body
            .as_bytes()
            .chunks(width)
            .map(|c| std::str::from_utf8(c).unwrap_or(""))
            .collect();
        let p = patterns(&format!("payload:\n{}\n", wrapped.join("\n")));
        assert_eq!(p, vec!["base64_wrapped_blob"], "width {width}");
    }
}

#[test]
fn long_hex_blob_is_a_binary_hint() {
    assert_eq!(
        patterns(&format!("fw = \"{}\"", synth("", HEX, 400))),
        vec!["hex_blob"]
    );
}

#[test]
fn dense_non_printables_are_a_binary_hint() {
    let s: String = (0..64u8)
        .map(|i| {
            if i % 2 == 0 {
                char::from(i % 8 + 1)
            } else {
                'a'
            }
        })
        .collect();
    assert_eq!(patterns(&s), vec!["nonprintable_run"]);
}

#[test]
fn binary_data_uri_is_a_low_binary_hint_and_textual_or_image_one_is_quiet() {
    let mut r = Rng(0x0d47_a001);
    let payload = r.chars(B64, 160);
    for mime in [
        "application/zip",
        "font/woff2",
        "application/octet-stream",
        "application/pdf",
    ] {
        for shape in [
            format!(".icon {{ background: url(data:{mime};base64,{payload}); }}"),
            format!("<img src=\"data:{mime};base64,{payload}==\">"),
        ] {
            let rep = score(&shape);
            assert_eq!(patterns(&shape), ["base64_blob"], "{shape}");
            assert_eq!(rep.verdict, Verdict::Low, "{shape}");
            let f = &rep.detected_patterns[0];
            assert!(f.span().len() >= payload.len(), "{shape}");
        }
    }
    // an image is content a page shows (issue 43), text is text
    for mime in [
        "application/json;charset=utf-8",
        "image/svg+xml",
        "image/png",
        "image/jpeg",
        "text/css",
        "text/javascript",
        "",
    ] {
        let shape = format!("//# sourceMappingURL=data:{mime};base64,{payload}");
        assert!(
            patterns(&shape).is_empty(),
            "{shape}: {:?}",
            patterns(&shape)
        );
    }
    // below the data-URI length, and text that is not dense binary, stay quiet
    let short = format!("url(data:image/png;base64,{})", r.chars(B64, 60));
    assert!(patterns(&short).is_empty());
}
