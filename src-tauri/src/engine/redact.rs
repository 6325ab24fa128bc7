//! User names and passwords kept out of what leaves the queue: log lines and stored error
//! messages. The queue keeps the whole URL, which it needs to fetch; nothing else does.

use std::borrow::Cow;

/// A URL without its user name and password.
pub fn url(url: &str) -> Cow<'_, str> {
    super::intake::without_credentials(url)
}

/// Any text (an error message from the HTTP stack, a redirect target) with the credentials
/// of every URL in it removed: `scheme://user:pass@host` becomes `scheme://host`.
pub fn text(text: &str) -> Cow<'_, str> {
    let without_users = users(text);
    let without_encoded = match encoded_users(&without_users) {
        Cow::Borrowed(_) => without_users,
        Cow::Owned(s) => Cow::Owned(s),
    };
    match query_passwords(&without_encoded) {
        Cow::Borrowed(_) => without_encoded,
        Cow::Owned(s) => Cow::Owned(s),
    }
}

/// A URL inside another's query, percent-encoded (`?url=http%3A%2F%2Fuser%3Apass%40host`, as
/// a lookup service is asked about a page): its user and password go too.
fn encoded_users(text: &str) -> Cow<'_, str> {
    const SEP: &str = "%3a%2f%2f";
    let lower = text.to_ascii_lowercase();
    if !lower.contains(SEP) || !lower.contains("%40") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    while let Some(found) = lower[from..].find(SEP) {
        let authority_start = from + found + SEP.len();
        out.push_str(&text[from..authority_start]);
        // The encoded authority ends at an encoded `/`, `?` or `#`, or where the parameter does.
        let rest = &lower[authority_start..];
        let end = ["%2f", "%3f", "%23", "&", "#", ")", " "]
            .iter()
            .filter_map(|stop| rest.find(stop))
            .min()
            .unwrap_or(rest.len());
        let authority = &text[authority_start..authority_start + end];
        match rest[..end].rfind("%40") {
            Some(i) => out.push_str(&authority[i + 3..]),
            None => out.push_str(authority),
        }
        from = authority_start + end;
    }
    out.push_str(&text[from..]);
    Cow::Owned(out)
}

/// `scheme://user:pass@host` becomes `scheme://host`.
fn users(text: &str) -> Cow<'_, str> {
    if !text.contains("://") || !text.contains('@') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        // The authority ends where the path, query or fragment begins, or where the URL does
        // (a password may hold `'` or `)`, so those end it only when no `@` follows first).
        let end = tail
            .find(|c: char| matches!(c, '/' | '?' | '#') || c.is_whitespace())
            .unwrap_or(tail.len());
        let end = if tail[..end].contains('@') {
            end
        } else {
            tail[..end].find([')', '>', '"', '\'']).unwrap_or(end)
        };
        let authority = &tail[..end];
        match authority.rfind('@') {
            Some(i) => out.push_str(&authority[i + 1..]),
            None => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// Query parameter names whose value is a secret: any name ending in "token" (GitLab's
/// `private_token`, `auth_token`, `x-amz-security-token`) or in "_key"/"-key", `key` itself
/// (Google's APIs), `jwt`, the signatures of signed links (S3, Google Cloud), and any name
/// holding "password" (`?password=…`, `&sslpassword=…`, which a PostgreSQL address may carry).
/// `tokens=` and `keyword=` are not secrets.
fn secret_parameter(name: &str) -> bool {
    const NAMES: &[&str] = &[
        "key",
        "jwt",
        "auth",
        "apikey",
        "secret",
        "client_secret",
        "sig",
        "signature",
        "x-amz-signature",
        "x-amz-credential",
        "x-goog-signature",
        "x-goog-credential",
    ];
    let name = name.to_ascii_lowercase();
    name.contains("password")
        || name.ends_with("token")
        || name.ends_with("_key")
        || name.ends_with("-key")
        || NAMES.contains(&name.as_str())
}

/// A query parameter whose value is a secret ([`secret_parameter`]) keeps its name and loses
/// its value.
fn query_passwords(text: &str) -> Cow<'_, str> {
    if !text.contains('=') || !text.contains(['?', '&']) {
        return Cow::Borrowed(text);
    }
    let bytes = text.as_bytes();
    let mut out = String::new();
    let mut from = 0;
    let mut i = 0;
    while i < bytes.len() {
        if !matches!(bytes[i], b'?' | b'&') {
            i += 1;
            continue;
        }
        let name_start = i + 1;
        let name_end = text[name_start..]
            .find(|c: char| matches!(c, '=' | '&' | '#' | '?') || c.is_whitespace())
            .map_or(text.len(), |k| name_start + k);
        if !text[name_end..].starts_with('=') || !secret_parameter(&text[name_start..name_end]) {
            i = name_end.max(i + 1);
            continue;
        }
        let value = name_end + 1;
        // A password may hold `)` or `'`: only what ends a query parameter ends it.
        let end = text[value..]
            .find(|c: char| matches!(c, '&' | '#') || c.is_whitespace())
            .map_or(text.len(), |k| value + k);
        out.push_str(&text[from..value]);
        out.push_str("***");
        from = end;
        i = end;
    }
    if from == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[from..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_leave_every_url_in_a_message() {
        assert_eq!(
            text(
                "error sending request for url (http://reader:s3cret@127.0.0.1:8080/a?b=c): connection refused"
            ),
            "error sending request for url (http://127.0.0.1:8080/a?b=c): connection refused"
        );
        assert_eq!(
            text("redirect https://tok@git.example/x -> http://u:p@[::1]:9/y"),
            "redirect https://git.example/x -> http://[::1]:9/y"
        );
        assert_eq!(
            text("mail me at a@b.example, see https://x.example/@user"),
            "mail me at a@b.example, see https://x.example/@user"
        );
        assert!(matches!(text("no urls here"), Cow::Borrowed(_)));
        assert_eq!(
            text("cannot connect to postgres://ann:it's)x@db/g: refused"),
            "cannot connect to postgres://db/g: refused"
        );
        assert_eq!(
            text("(see http://a.example) or mail b@c.example"),
            "(see http://a.example) or mail b@c.example"
        );
        assert_eq!(
            text(
                "cannot reach postgres://db.lab/g?user=ann&password=s3cret&sslmode=require: refused"
            ),
            "cannot reach postgres://db.lab/g?user=ann&password=***&sslmode=require: refused"
        );
        assert_eq!(
            text("postgres://u:p@db/g?sslpassword=k3y"),
            "postgres://db/g?sslpassword=***"
        );
        assert_eq!(
            text("the password=field of a form"),
            "the password=field of a form"
        );
        assert_eq!(
            text("at postgres://db/g?password=ab)cd'ef&sslmode=require failed"),
            "at postgres://db/g?password=***&sslmode=require failed"
        );
        // Tokens, keys and signatures in a link's query.
        assert_eq!(
            text("GET https://api.example/v1?api_key=K3Y&q=rivers&access_token=T0K failed"),
            "GET https://api.example/v1?api_key=***&q=rivers&access_token=*** failed"
        );
        assert_eq!(
            text("https://b.s3.example/p.pdf?X-Amz-Credential=AKIA&X-Amz-Signature=abc123"),
            "https://b.s3.example/p.pdf?X-Amz-Credential=***&X-Amz-Signature=***"
        );
        assert_eq!(
            text(
                "https://gitlab.example/api/v4/projects?private_token=glpat-1&key=AIza2&auth_token=a3&jwt=e4&client_key=c5&per_page=9"
            ),
            "https://gitlab.example/api/v4/projects?private_token=***&key=***&auth_token=***&jwt=***&client_key=***&per_page=9"
        );
        assert_eq!(
            text("see https://x.example/?q=token&tokens=1&keyword=a"),
            "see https://x.example/?q=token&tokens=1&keyword=a",
            "only a parameter so named, and not its value"
        );
        // A page's address in a lookup's query, percent-encoded.
        assert_eq!(
            text(
                "error sending request for url (http://archive.example/available?url=http%3A%2F%2Fbob%3Ahunter2%40127.0.0.1%3A28931%2Fgone%2Fx&t=1)"
            ),
            "error sending request for url (http://archive.example/available?url=http%3A%2F%2F127.0.0.1%3A28931%2Fgone%2Fx&t=1)"
        );
        assert_eq!(
            text("?url=https%3a%2f%2fx.example%2Fa%40b"),
            "?url=https%3a%2f%2fx.example%2Fa%40b",
            "an @ in the encoded path stays"
        );
    }
}
