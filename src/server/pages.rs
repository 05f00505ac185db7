//! Cursor pagination for `tools/list`, `resources/list`, `resources/templates/list` and
//! `prompts/list`: pages of [`PAGE`] items, the cursor being the offset of the next page as
//! this server handed it out. A cursor it never gave (not a number, or past the end) is
//! `-32602`, so a client with a stale or invented cursor learns it instead of reading page 1.

use rmcp::ErrorData;

use super::errors;

/// Items per page.
pub(super) const PAGE: usize = 100;

/// One page of `items` from `cursor`, and the cursor of the next page if there is one.
pub(super) fn page<T>(
    items: Vec<T>,
    cursor: Option<&str>,
) -> Result<(Vec<T>, Option<String>), ErrorData> {
    page_of(items, cursor, PAGE)
}

fn page_of<T>(
    items: Vec<T>,
    cursor: Option<&str>,
    size: usize,
) -> Result<(Vec<T>, Option<String>), ErrorData> {
    let start = match cursor {
        None => 0,
        Some(cursor) => cursor
            .parse::<usize>()
            .ok()
            .filter(|&start| start > 0 && start < items.len())
            .ok_or_else(|| errors::bad_cursor(cursor))?,
    };
    let total = items.len();
    let end = start.saturating_add(size).min(total);
    let next = (end < total).then(|| end.to_string());
    let page = items.into_iter().skip(start).take(end - start).collect();
    Ok((page, next))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn pages_follow_the_cursor_and_refuse_others() {
        let items: Vec<u32> = (0..5).collect();
        assert_eq!(
            page_of(items.clone(), None, 2).unwrap(),
            (vec![0, 1], Some("2".to_owned()))
        );
        assert_eq!(
            page_of(items.clone(), Some("4"), 2).unwrap(),
            (vec![4], None)
        );
        for bad in ["0", "5", "x", "-1", ""] {
            assert!(page_of(items.clone(), Some(bad), 2).is_err(), "{bad}");
        }
        assert_eq!(page_of(Vec::<u32>::new(), None, 2).unwrap(), (vec![], None));
    }
}
