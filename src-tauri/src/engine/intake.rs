//! Finding web addresses in whatever the researcher pasted, dropped or typed, and saying per
//! line why something was not taken.
//!
//! Prose lines without anything URL-like are text around the links, not input, and are passed
//! over. Anything that looks like an attempt at an address (it has `scheme:`/`://` or starts with
//! `www.`), or a line that is one lone word, is either queued or rejected with a reason.

use serde::Serialize;
use url::Url;

use super::store::NewJob;

/// One finding in the input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Found {
    Url {
        input: String,
        url: String,
        key: String,
        host: String,
    },
    Rejected {
        input: String,
        reason: String,
    },
}

impl Found {
    pub fn as_new_job(&self) -> Option<NewJob> {
        match self {
            Found::Url { url, key, host, .. } => Some(NewJob {
                url: url.clone(),
                url_key: key.clone(),
                host: host.clone(),
            }),
            Found::Rejected { .. } => None,
        }
    }
}

const MAX_URL_LEN: usize = 8192;

/// Query parameters that only track the click; dropped from the duplicate key.
const TRACKING_PARAMS: &[&str] = &[
    "fbclid", "gclid", "dclid", "gbraid", "wbraid", "msclkid", "yclid", "mc_cid", "mc_eid",
    "igshid", "_ga", "_gl", "ref_src", "spm",
];

/// Scan free text (a paste, a dropped file, stdin).
pub fn scan_text(text: &str) -> Vec<Found> {
    let mut out = Vec::new();
    for line in text.lines() {
        let before = out.len();
        for token in candidates(line) {
            out.push(vet(token));
        }
        let trimmed = line.trim();
        if out.len() == before && is_lone_word(trimmed) {
            out.push(Found::Rejected {
                input: shown(trimmed),
                reason: no_address_reason(trimmed),
            });
        }
    }
    out
}

/// Scan command-line arguments: each argument must hold at least one address.
pub fn scan_args<S: AsRef<str>>(args: &[S]) -> Vec<Found> {
    let mut out = Vec::new();
    for arg in args {
        let arg = arg.as_ref();
        let found = scan_text(arg);
        if found.is_empty() {
            out.push(Found::Rejected {
                input: shown(arg.trim()),
                reason: no_address_reason(arg.trim()),
            });
        } else {
            out.extend(found);
        }
    }
    out
}

/// The host a person means by `input`, as jobs store it: a host name (`Example.COM`), a host
/// and port, or any link on the host (`https://example.com/a`). Lower-cased, international
/// names in their ASCII form. `Err` says why `input` names no host.
pub fn host_name(input: &str) -> Result<String, String> {
    let t = input.trim();
    let url = if t.contains("://") {
        Url::parse(t)
    } else {
        Url::parse(&format!("http://{t}"))
    };
    match url.ok().as_ref().and_then(Url::host_str) {
        Some(host) if !host.is_empty() && !t.chars().any(char::is_whitespace) => {
            Ok(host.to_string())
        }
        _ => Err(format!(
            "“{}” is not a host name; give one such as example.com, or a link on the host",
            shown(t)
        )),
    }
}

/// The most of a rejected input that is echoed back.
const SHOWN_CHARS: usize = 200;

/// A rejected input as it is echoed to the terminal or the window: control characters escaped
/// (see [`printable`]), and a long one cut, saying how long it was.
fn shown(input: &str) -> String {
    let total = input.chars().count();
    if total <= SHOWN_CHARS {
        return printable(input).into_owned();
    }
    let cut: String = input.chars().take(SHOWN_CHARS).collect();
    format!("{}… ({total} characters)", printable(&cut))
}

/// Text from outside (a line of input, a page's title, an error quoting a server) with its
/// control characters escaped (`\u{1b}`): an escape sequence printed raw would act on the
/// terminal that prints it (clear it, retitle it, or on some terminals write the clipboard).
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains(char::is_control) {
        return text.into();
    }
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect::<String>()
        .into()
}

/// Whether text decoded from a file or standard input is binary data rather than text: it
/// holds a NUL, or more than one character in ten of its start is not text (bytes that were
/// not UTF-8, control characters other than tab, line feed, carriage return and form feed).
pub fn looks_binary(text: &str) -> bool {
    if text.contains('\0') {
        return true;
    }
    let (mut chars, mut odd) = (0usize, 0usize);
    for c in text.chars().take(8192) {
        chars += 1;
        if c == char::REPLACEMENT_CHARACTER
            || (c.is_control() && !matches!(c, '\t' | '\n' | '\r' | '\x0c'))
        {
            odd += 1;
        }
    }
    odd * 10 > chars
}

fn no_address_reason(input: &str) -> String {
    if input.contains('.') && !input.contains(char::is_whitespace) {
        "no web address found (did you mean https://…? only http:// and https:// links are taken)"
            .into()
    } else {
        "no web address found".into()
    }
}

fn is_lone_word(line: &str) -> bool {
    // Markup such as a bookmarks file's `<DL><p>` surrounds links; it is not an attempt at one.
    let markup = line.starts_with('<') && line.ends_with('>');
    !line.is_empty()
        && !line.contains(char::is_whitespace)
        && !line.starts_with('#')
        && !line.starts_with("//")
        && !markup
}

/// Characters that never appear unescaped inside a URL, so they delimit one in free text
/// (Markdown brackets, BibTeX braces, HTML attribute quotes).
fn is_delimiter(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            '<' | '>' | '"' | '\'' | '`' | '{' | '}' | '|' | '\\' | '^' | '[' | ']'
        )
}

/// Schemes that are never fetched but are worth a clear rejection when someone pastes them.
const REFUSED_SCHEMES: &[&str] = &[
    "javascript:",
    "vbscript:",
    "file:",
    "data:",
    "mailto:",
    "about:",
    "blob:",
    "chrome:",
];

/// The line cut at delimiters, except the brackets of an IPv6 address right after `://`
/// (`http://[::1]:8080/`), which belong to the URL.
fn tokens(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = None;
    // Where the next `]` is, found once per `]` rather than once per `[`: a line of many
    // `://[` without a `]` was searched to its end for each one (quadratic).
    let mut next_close: Option<Option<usize>> = None;
    let mut rest = line.char_indices();
    while let Some((i, c)) = rest.next() {
        if c == '['
            && line[..i].ends_with("://")
            && let Some(len) = next_close_after(line, i, &mut next_close).filter(|&len| {
                len > 0
                    && line[i + 1..i + 1 + len]
                        .chars()
                        .all(|c| c.is_ascii_hexdigit() || matches!(c, ':' | '.' | '%'))
            })
        {
            // Past the closing bracket; the token goes on.
            rest.nth(len);
            continue;
        }
        if is_delimiter(c) {
            if let Some(s) = start.take() {
                out.push(&line[s..i]);
            }
        } else if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(s) = start {
        out.push(&line[s..]);
    }
    out
}

/// The distance from the `[` at `i` to the first `]` after it, if any. `cache` holds the last
/// `]` found (or that there is none after it), which stays the answer until `i` passes it.
fn next_close_after(line: &str, i: usize, cache: &mut Option<Option<usize>>) -> Option<usize> {
    let close = match *cache {
        Some(Some(at)) if at > i => Some(at),
        Some(None) => None,
        _ => {
            let found = line[i + 1..].find(']').map(|len| i + 1 + len);
            *cache = Some(found);
            found
        }
    };
    close.map(|at| at - i - 1)
}

fn candidates(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for token in tokens(line) {
        let lower = token.to_ascii_lowercase();
        let start = lower
            .find("://")
            .map(|i| scheme_start(&lower[..i]))
            .or_else(|| {
                lower
                    .find("www.")
                    .filter(|&i| i == 0 || !lower.as_bytes()[i - 1].is_ascii_alphanumeric())
            })
            .or_else(|| {
                REFUSED_SCHEMES
                    .iter()
                    .filter_map(|s| find_scheme(&lower, s))
                    .min()
            });
        let Some(start) = start else { continue };
        let candidate = trim_trailing(&token[start..]);
        if !candidate.is_empty() {
            out.push(candidate);
        }
    }
    out
}

fn find_scheme(lower: &str, scheme: &str) -> Option<usize> {
    lower
        .find(scheme)
        .filter(|&i| i == 0 || !lower.as_bytes()[i - 1].is_ascii_alphanumeric())
}

/// Walk back from `://` over the scheme's characters.
fn scheme_start(before: &str) -> usize {
    let bytes = before.as_bytes();
    let mut i = bytes.len();
    while i > 0
        && (bytes[i - 1].is_ascii_alphanumeric() || matches!(bytes[i - 1], b'+' | b'-' | b'.'))
    {
        i -= 1;
    }
    // A scheme starts with a letter: skip leading digits or punctuation glued on ("1.http://").
    while i < bytes.len() && !bytes[i].is_ascii_alphabetic() {
        i += 1;
    }
    i
}

/// Drop sentence punctuation and unbalanced closing parentheses after a URL in prose.
fn trim_trailing(s: &str) -> &str {
    // The parentheses are counted once and kept up to date: recounting them for each `)`
    // dropped made a long run of them quadratic (minutes for a 100 KB line).
    let open = s.matches('(').count();
    let mut close = s.matches(')').count();
    let mut s = s;
    loop {
        let before = s.len();
        s = s.trim_end_matches(['.', ',', ';', ':', '!', '?', '*']);
        if s.ends_with(')') && close > open {
            s = &s[..s.len() - 1];
            close -= 1;
        }
        if s.len() == before {
            return s;
        }
    }
}

/// Decide one candidate.
pub fn vet(input: &str) -> Found {
    let reject = |reason: String| Found::Rejected {
        input: shown(input),
        reason,
    };
    if input.len() > MAX_URL_LEN {
        return reject(format!("address longer than {MAX_URL_LEN} characters"));
    }
    let lower = input.to_ascii_lowercase();
    let text = if lower.starts_with("www.") {
        format!("https://{input}")
    } else {
        input.to_string()
    };
    let url = match Url::parse(&text) {
        Ok(u) => u,
        Err(e) => {
            if let Some(s) = REFUSED_SCHEMES.iter().find(|s| lower.starts_with(**s)) {
                return reject(format!(
                    "{s} links cannot be fetched; only http:// and https:// are taken"
                ));
            }
            return reject(format!("malformed address: {e}"));
        }
    };
    if url.scheme() != "http" && url.scheme() != "https" {
        return reject(format!(
            "{}: links cannot be fetched; only http:// and https:// are taken",
            url.scheme()
        ));
    }
    let Some(host) = url.host_str().filter(|h| !h.is_empty()) else {
        return reject("malformed address: no host".into());
    };
    if let Some(reason) = unfetchable_host(&url) {
        return reject(reason);
    }
    Found::Url {
        input: input.to_string(),
        url: url.to_string(),
        key: normalize(&url),
        host: host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase(),
    }
}

/// A host that cannot exist by definition; fetching it would only wait for DNS to say so.
pub fn unfetchable_host(url: &Url) -> Option<String> {
    let host = url.host_str()?.trim_end_matches('.').to_ascii_lowercase();
    if host == "invalid" || host.ends_with(".invalid") {
        return Some(format!(
            "no such host: {host} (the .invalid domain never exists)"
        ));
    }
    None
}

/// A URL without its user name and password, for what leaves the queue: a library document (a
/// library gets shared and synced) or an OS notification (shown on a locked screen and kept in
/// the notification history). What sits before the `@` is often a secret: a password, or an
/// access token given as the user name (`https://TOKEN@git.example/`). The queue keeps the
/// whole URL, which it needs to fetch.
pub fn without_credentials(url: &str) -> std::borrow::Cow<'_, str> {
    match Url::parse(url) {
        Ok(mut u) if !u.username().is_empty() || u.password().is_some() => {
            // Both only fail for URLs that cannot have credentials, which these have.
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.to_string().into()
        }
        _ => url.into(),
    }
}

/// The duplicate key: scheme and host lower-cased and default port dropped (the URL parser
/// does both), fragment removed, click-tracking parameters removed.
pub fn normalize(url: &Url) -> String {
    let mut u = url.clone();
    u.set_fragment(None);
    if let Some(path) = decode_unreserved(u.path()) {
        u.set_path(&path);
    }
    if u.query().is_some() {
        let kept: Vec<(String, String)> = u
            .query_pairs()
            .filter(|(k, _)| {
                let k = k.to_ascii_lowercase();
                !k.starts_with("utm_") && !TRACKING_PARAMS.contains(&k.as_str())
            })
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        if kept.is_empty() {
            u.set_query(None);
        } else {
            u.query_pairs_mut().clear().extend_pairs(kept);
        }
    }
    u.to_string()
}

/// The path with percent-encoded unreserved characters decoded (`%7Euser` is `~user`, RFC
/// 3986 §6.2.2.2), or `None` if it has none. Other escapes stay: `%2F` is not a `/`.
fn decode_unreserved(path: &str) -> Option<String> {
    let bytes = path.as_bytes();
    let hex = |b: u8| (b as char).to_digit(16);
    let mut out = String::with_capacity(path.len());
    let (mut i, mut changed) = (0, false);
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let (Some(hi), Some(lo)) = (
                bytes.get(i + 1).copied().and_then(hex),
                bytes.get(i + 2).copied().and_then(hex),
            )
        {
            let c = char::from((hi * 16 + lo) as u8);
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~') {
                out.push(c);
                changed = true;
                i += 3;
                continue;
            }
        }
        // Copy up to the next '%' whole, so characters beyond ASCII stay intact.
        let next = path[i + 1..].find('%').map_or(bytes.len(), |n| i + 1 + n);
        out.push_str(&path[i..next]);
        i = next;
    }
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(found: &[Found]) -> Vec<String> {
        found
            .iter()
            .filter_map(|f| match f {
                Found::Url { url, .. } => Some(url.clone()),
                Found::Rejected { .. } => None,
            })
            .collect()
    }

    fn rejected(found: &[Found]) -> Vec<(String, String)> {
        found
            .iter()
            .filter_map(|f| match f {
                Found::Rejected { input, reason } => Some((input.clone(), reason.clone())),
                Found::Url { .. } => None,
            })
            .collect()
    }

    #[test]
    fn credentials_are_taken_out_of_a_url_and_nothing_else_changes() {
        assert_eq!(
            without_credentials("https://reader:s3cret@news.example/a?b=c&d=e#f"),
            "https://news.example/a?b=c&d=e#f"
        );
        assert_eq!(
            without_credentials("https://ghp_token123@git.example/notes"),
            "https://git.example/notes"
        );
        assert_eq!(
            without_credentials("http://:pw@[::1]:8080/x"),
            "http://[::1]:8080/x"
        );
        // Without credentials, the text is returned as it came, even where the parser would
        // write it differently.
        for same in [
            "HTTP://Example.COM:80/a b",
            "http://127.0.0.1:8080/a?b=c#d",
            "not a url @ all",
        ] {
            assert_eq!(without_credentials(same), same);
        }
    }

    #[test]
    fn text_from_the_web_is_printed_without_its_control_characters() {
        assert_eq!(printable("Plain title"), "Plain title");
        assert_eq!(
            printable("Evil \u{1b}]0;pwned\u{7} \u{9b}31m\nline"),
            "Evil \\u{1b}]0;pwned\\u{7} \\u{9b}31m\\nline"
        );
    }

    #[test]
    fn finds_urls_in_prose_markdown_bibtex_and_html() {
        let text = "See https://example.com/a, and (http://example.org/b).\n\
                    [paper](https://doi.org/10.1000/xyz123) is good.\n\
                    @article{x, url = {https://arxiv.org/abs/2101.00001}}\n\
                    <DT><A HREF=\"https://news.example/story?id=1\" ADD_DATE=\"1\">Story</A>\n\
                    wiki https://en.wikipedia.org/wiki/Rust_(programming_language).\n\
                    www.example.net/page\n\
                    local http://[::1]:8080/v6 and [v6](http://[2001:db8::1]/x).\n\
                    <DL><p>\n\
                    </DL>\n\
                    Just some words here.";
        let found = scan_text(text);
        assert_eq!(
            urls(&found),
            vec![
                "https://example.com/a",
                "http://example.org/b",
                "https://doi.org/10.1000/xyz123",
                "https://arxiv.org/abs/2101.00001",
                "https://news.example/story?id=1",
                "https://en.wikipedia.org/wiki/Rust_(programming_language)",
                "https://www.example.net/page",
                "http://[::1]:8080/v6",
                "http://[2001:db8::1]/x",
            ]
        );
        assert!(rejected(&found).is_empty(), "{found:?}");
    }

    #[test]
    fn rejects_dangerous_and_malformed_input_with_reasons() {
        let found = scan_text(
            "javascript:alert(1)\nfile:///etc/passwd\nhttp://\nhttps://exa mple.com\nftp://x.org/f\nhttp://a.invalid/x\nhttp://h:99999/\nnotaurl\nexample.com",
        );
        let r = rejected(&found);
        let inputs: Vec<&str> = r.iter().map(|(i, _)| i.as_str()).collect();
        assert_eq!(
            inputs,
            vec![
                "javascript:alert(1)",
                "file:///etc/passwd",
                "http://",
                "ftp://x.org/f",
                "http://a.invalid/x",
                "http://h:99999/",
                "notaurl",
                "example.com"
            ]
        );
        assert!(r[0].1.contains("only http:// and https://"), "{r:?}");
        assert!(r[1].1.contains("file:"), "{r:?}");
        assert!(r[2].1.contains("malformed"), "{r:?}");
        assert!(r[4].1.contains("never exists"), "{r:?}");
        assert!(r[5].1.contains("malformed"), "{r:?}");
        assert!(r[7].1.contains("https://"), "{r:?}");
        // "https://exa mple.com" is the address https://exa followed by prose.
        assert_eq!(urls(&found), vec!["https://exa/"]);
    }

    #[test]
    fn every_argument_must_hold_an_address() {
        let found = scan_args(&["https://ok.example/", "hello world"]);
        assert_eq!(urls(&found), vec!["https://ok.example/"]);
        assert_eq!(
            rejected(&found),
            vec![(
                "hello world".to_string(),
                "no web address found".to_string()
            )]
        );
    }

    #[test]
    fn normalization_drops_tracking_fragment_and_default_port() {
        let u = Url::parse("HTTP://Example.COM:80/a?utm_source=x&id=3&fbclid=y#frag").expect("url");
        assert_eq!(normalize(&u), "http://example.com/a?id=3");
        let u = Url::parse("https://example.com:443/?gclid=1").expect("url");
        assert_eq!(normalize(&u), "https://example.com/");
        // Escaped unreserved characters are the characters themselves; other escapes stay.
        let key = |s: &str| normalize(&Url::parse(s).expect("url"));
        assert_eq!(
            key("https://example.com/%7Euser/%41b"),
            "https://example.com/~user/Ab"
        );
        assert_eq!(
            key("https://example.com/%7euser"),
            key("https://example.com/~user")
        );
        assert_eq!(
            key("https://example.com/a%2Fb%20c%"),
            "https://example.com/a%2Fb%20c%"
        );
        assert_eq!(
            key("https://example.com/caf%C3%A9/%7E"),
            "https://example.com/caf%C3%A9/~"
        );
    }

    #[test]
    fn a_rejected_input_is_echoed_without_control_characters_and_cut_when_long() {
        // An escape sequence in a dropped file must not reach the terminal that prints it.
        let r = rejected(&scan_text(
            "evil\u{1b}]0;owned\u{7}word\nhttps://ok.example/",
        ));
        assert_eq!(r.len(), 1, "{r:?}");
        assert_eq!(r[0].0, "evil\\u{1b}]0;owned\\u{7}word");
        assert!(!r[0].0.chars().any(char::is_control));
        let long = "x".repeat(100_000);
        let r = rejected(&scan_text(&long));
        assert_eq!(r[0].0, format!("{}… (100000 characters)", "x".repeat(200)));
        let r = rejected(&scan_text(&format!("https://{long}.example/")));
        assert!(r[0].0.ends_with("… (100017 characters)"), "{}", r[0].0);
        assert_eq!(r[0].1, "address longer than 8192 characters");
    }

    #[test]
    fn long_runs_of_parentheses_and_brackets_are_scanned_in_linear_time() {
        // Each `)` trimmed used to recount the token's parentheses, and each `[` after `://`
        // searched the rest of the line for a `]`: minutes for a line of a dropped file.
        let parens = format!("see http://x.example/a{}.", ")".repeat(20_000));
        let brackets = "://[".repeat(250_000);
        let start = std::time::Instant::now();
        assert_eq!(trim_trailing(&parens[4..]), "http://x.example/a");
        assert_eq!(tokens(&brackets).len(), 250_000);
        let took = start.elapsed();
        assert!(took < std::time::Duration::from_secs(1), "took {took:?}");
        // What is kept is unchanged: balanced parentheses stay, an IPv6 host stays whole.
        assert_eq!(
            urls(&scan_text(&format!("{parens}\n(https://w.example/a_(b)).")))[1..],
            ["https://w.example/a_(b)"]
        );
        assert_eq!(
            urls(&scan_text("http://[::1]:1/a [x] http://[::2]/b]")),
            ["http://[::1]:1/a", "http://[::2]/b"]
        );
    }

    #[test]
    fn binary_data_is_told_from_text() {
        assert!(looks_binary("https://a.example/\0"));
        let noise =
            String::from_utf8_lossy(&[0xff, 0xfe, 0x41, 0x80, 0x9f, 0x42, 0xc3]).into_owned();
        assert!(looks_binary(&noise.repeat(50)));
        assert!(!looks_binary(
            "https://a.example/\r\n\tnotes\x0c\nhttps://b.example/"
        ));
        // A few bad bytes in a long list are a damaged text file, not a binary one.
        let list = format!("{}\u{fffd}\n", "https://a.example/page\n".repeat(40));
        assert!(!looks_binary(&list));
    }

    #[test]
    fn a_host_is_named_by_its_name_or_by_a_link_on_it() {
        assert_eq!(host_name("Example.COM").as_deref(), Ok("example.com"));
        assert_eq!(
            host_name(" example.com:8080 ").as_deref(),
            Ok("example.com")
        );
        assert_eq!(
            host_name("https://Sub.Example.com/a?b=1").as_deref(),
            Ok("sub.example.com")
        );
        assert_eq!(
            host_name("example.com/paper/1").as_deref(),
            Ok("example.com")
        );
        assert_eq!(
            host_name("bücher.example").as_deref(),
            Ok("xn--bcher-kva.example")
        );
        assert_eq!(host_name("127.0.0.1").as_deref(), Ok("127.0.0.1"));
        for bad in [
            "not a host!",
            "",
            "https://",
            "a b.example",
            "file:///etc/passwd",
        ] {
            let e = host_name(bad).expect_err(bad);
            assert!(e.contains("is not a host name"), "{bad}: {e}");
        }
    }
}
