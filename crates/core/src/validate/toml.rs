//! TOML 1.0/1.1 through the `toml` crate: the first syntax or semantic error (duplicate keys,
//! redefined tables, bad values), located from the error's byte span.

use super::Finding;

pub(super) fn check(content: &str) -> Vec<Finding> {
    let Err(err) = ::toml::from_str::<::toml::Table>(content) else {
        return Vec::new();
    };
    let offset = err.span().map_or(0, |span| span.start);
    let message = err.message().trim().to_owned();
    vec![Finding::error(offset, message)]
}
