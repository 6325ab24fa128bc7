//! Firefox's bookmark backup (Bookmarks → Manage bookmarks → Import and Backup → Backup…,
//! `bookmarks-YYYY-MM-DD.json`): the tree of places as JSON, read one node at a time as it
//! streams in, never held whole. Its bookmarks become the same items, with the same folder
//! tags, as Firefox's HTML export of the same bookmarks gives.

use std::fmt;
use std::io::Read;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::{Anchor, Item, item, tags_of};
use crate::engine::intake::json_escapes::LoneSurrogates;

/// Why a bookmark backup could not be read to its end.
#[derive(Debug, thiserror::Error)]
pub enum FirefoxBackupError {
    /// A damaged part ends the file there: JSON has no way to skip it.
    #[error(
        "could not read the Firefox bookmark backup after its first {read} bookmark(s): {source}"
    )]
    Json {
        read: usize,
        source: serde_json::Error,
    },
}

/// Whether the start of a file is a Firefox bookmark backup: a JSON object whose first node
/// is the places root (`"guid":"root________"`, `"root":"placesRoot"`).
pub fn is_firefox_backup(head: &str) -> bool {
    let text = head.strip_prefix('\u{feff}').unwrap_or(head).trim_start();
    text.starts_with('{')
        && (text.contains("\"guid\":\"root________\"") || text.contains("\"root\":\"placesRoot\""))
}

/// Read a backup, handing each bookmark to `on_item` in file order. Items before a damaged
/// part were handed over already when the error comes back.
pub fn read_firefox_backup<R: Read>(
    input: R,
    on_item: &mut dyn FnMut(Item),
) -> Result<(), FirefoxBackupError> {
    let input = LoneSurrogates::new(std::io::BufReader::new(input));
    let mut de = serde_json::Deserializer::from_reader(input);
    let mut read = 0;
    let mut count = |item: Item| {
        read += 1;
        on_item(item)
    };
    let mut walk = Walk {
        folders: Vec::new(),
        in_tags: 0,
        on_item: &mut count,
    };
    let result = Node(&mut walk).deserialize(&mut de).and_then(|()| de.end());
    result.map_err(|source| FirefoxBackupError::Json { read, source })
}

/// Where the reading is: the folders open, outermost first (`None` for one that is no tag).
struct Walk<'f> {
    folders: Vec<Option<String>>,
    /// Inside the tag folder: its bookmarks are the tagged ones again, not bookmarks of their
    /// own (their tags come with each bookmark, `"tags":"a,b"`).
    in_tags: usize,
    on_item: &'f mut dyn FnMut(Item),
}

/// One node of the tree: a folder (its `children` read in place), a bookmark or a separator.
struct Node<'w, 'f>(&'w mut Walk<'f>);

/// A folder's `children`, each a [`Node`].
struct Children<'w, 'f>(&'w mut Walk<'f>);

#[derive(Default)]
struct Fields {
    kind: Option<String>,
    title: Option<String>,
    uri: Option<String>,
    tags: Option<String>,
    root: Option<String>,
    date_added: Option<i64>,
}

impl<'de> DeserializeSeed<'de> for Node<'_, '_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Node<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a bookmark, folder or separator (a JSON object)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let walk = self.0;
        let mut node = Fields::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "type" => node.kind = map.next_value()?,
                "title" => node.title = map.next_value()?,
                "uri" => node.uri = map.next_value()?,
                "tags" => node.tags = map.next_value()?,
                "root" => node.root = map.next_value()?,
                "dateAdded" => {
                    let n: Option<serde_json::Number> = map.next_value()?;
                    node.date_added = n.and_then(|n| n.as_i64());
                }
                // Firefox writes a folder's own fields before its children, so its name is
                // known by then.
                "children" => {
                    let tags = usize::from(node.root.as_deref() == Some("tagsFolder"));
                    walk.in_tags += tags;
                    walk.folders.push(folder_tag(&node));
                    let read = map.next_value_seed(Children(&mut *walk));
                    walk.folders.pop();
                    walk.in_tags -= tags;
                    read?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if node.kind.as_deref() == Some("text/x-moz-place") && walk.in_tags == 0 {
            let folders = walk.folders.iter().flatten().map(String::as_str);
            let tags = tags_of(folders, node.tags.as_deref());
            let anchor = Anchor {
                href: node.uri,
                // Microseconds, which the export's date reader tells by their size.
                add_date: node.date_added.map(|d| d.to_string()),
                tags: None,
                title: node.title.unwrap_or_default(),
            };
            (walk.on_item)(item(anchor, tags));
        }
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for Children<'_, '_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Children<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a folder's children (a JSON array)")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Node(&mut *self.0))?.is_some() {}
        Ok(())
    }
}

/// The tag a folder gives its bookmarks, as Firefox's HTML export names its roots: the menu's
/// bookmarks sit at the top (no tag), the toolbar, "Other Bookmarks" and the phone's are
/// folders of their own; the places root and the tag folder are none.
fn folder_tag(folder: &Fields) -> Option<String> {
    let name = match folder.root.as_deref() {
        Some("placesRoot" | "bookmarksMenuFolder" | "tagsFolder") => return None,
        Some("toolbarFolder") => "Bookmarks Toolbar",
        Some("unfiledBookmarksFolder") => "Other Bookmarks",
        Some("mobileFolder") => "Mobile Bookmarks",
        _ => folder.title.as_deref()?,
    };
    Some(name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::intake::Entry;

    const BACKUP: &str = include_str!("../../../../tests-fixtures/bookmarks/firefox-backup.json");

    fn read(text: &str) -> (Vec<Item>, Result<(), FirefoxBackupError>) {
        let mut items = Vec::new();
        let result = read_firefox_backup(text.as_bytes(), &mut |i| items.push(i));
        (items, result)
    }

    fn line(item: &Item) -> String {
        match item {
            Item::Entry(Entry {
                title, url, tags, ..
            }) => format!(
                "{} <{}> [{}]",
                title.as_deref().unwrap_or("-"),
                url.as_deref().unwrap_or("-"),
                tags.join(", ")
            ),
            Item::Skipped { what, reason } => format!("skipped {what}: {reason}"),
            Item::Rejected { what, reason } => format!("rejected {what}: {reason}"),
        }
    }

    #[test]
    fn a_backup_reads_as_its_html_export_would() {
        assert!(is_firefox_backup(BACKUP));
        let (items, result) = read(BACKUP);
        result.expect("read");
        let lines: Vec<String> = items.iter().map(line).collect();
        assert_eq!(
            lines,
            [
                "Deep learning | Nature <https://www.nature.com/articles/nature14539> []",
                "skipped Most Visited: a Firefox smart folder (place:), not a page",
                "Attention Is All You Need <https://arxiv.org/abs/1706.03762> \
                 [Research, Machine learning, thesis, transformers]",
                "A talk <https://example.org/talk> [Bookmarks Toolbar]",
                "skipped Save to Wayback: a bookmarklet (javascript:), not a page",
                "rejected A gopher hole: gopher: links cannot be fetched; only http:// and \
                 https:// are taken",
                "On the phone <https://example.org/phone> [Mobile Bookmarks]",
            ]
        );
        match &items[0] {
            Item::Entry(e) => assert_eq!(e.issued.as_deref(), Some("2023-07-14"), "{e:?}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn what_is_not_a_backup_is_told_apart() {
        assert!(!is_firefox_backup(
            "[{\"id\": \"a\", \"type\": \"article\"}]"
        ));
        assert!(!is_firefox_backup("{\"items\": []}"));
        assert!(is_firefox_backup(
            "\u{feff}  {\"guid\":\"root________\",\"title\":\"\""
        ));
    }

    #[test]
    fn a_damaged_backup_gives_what_came_before_and_says_so() {
        let cut = &BACKUP[..BACKUP.find("A talk").expect("fixture")];
        let (items, result) = read(cut);
        assert_eq!(items.len(), 3, "{items:?}");
        let e = result.expect_err("cut short").to_string();
        assert!(
            e.starts_with(
                "could not read the Firefox bookmark backup after its first 3 bookmark(s): "
            ),
            "{e}"
        );
    }

    /// A title cut in the middle of an emoji, as Firefox (JavaScript) writes it: `\ud83d`
    /// alone. It ended the backup there; it is U+FFFD, and the bookmarks after it are read.
    #[test]
    fn a_lone_surrogate_escape_is_a_replacement_character_not_the_end() {
        let backup = r#"{"guid":"root________","title":"","root":"placesRoot","children":[{"guid":"toolbar_____","title":"toolbar","root":"toolbarFolder","children":[{"type":"text/x-moz-place","title":"A","uri":"https://example.com/a"},{"type":"text/x-moz-place","title":"cut \ud83d","uri":"https://example.com/b"},{"type":"text/x-moz-place","title":"C","uri":"https://example.com/c"}]}]}"#;
        let (items, result) = read(backup);
        result.expect("read to the end");
        assert_eq!(items.len(), 3, "{items:?}");
        assert!(
            line(&items[1]).contains("cut \u{fffd}"),
            "{}",
            line(&items[1])
        );
    }

    #[test]
    fn folders_nested_past_json_s_limit_are_an_error_not_a_crash() {
        let deep = format!(
            "{{\"guid\":\"root________\",\"children\":{}[]{}}}",
            "[{\"children\":".repeat(10_000),
            "}]".repeat(10_000)
        );
        let (_, result) = read(&deep);
        let e = result.expect_err("too deep").to_string();
        assert!(e.contains("recursion limit exceeded"), "{e}");
    }
}
