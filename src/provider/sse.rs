//! An incremental Server-Sent Events parser, in the style of mini-redis's
//! frame parser: feed it bytes as they arrive, take out whatever complete
//! events are there, and the rest waits for more.
//!
//! It accepts any chunking — an event split inside a UTF-8 character or
//! inside its `\r\n\r\n` separator, one byte at a time — because it only
//! decodes an event once its separator has arrived. Events end at a blank
//! line (`\r\n\r\n`, `\n\n` or `\r\r`). Besides `data:` events it recognises
//! a bare JSON object outside any `data:` line, which is how Google reports
//! an error in the middle of a 200 response.

/// The most one event may hold before the stream is refused as malformed
/// (the default; `SseParser::with_max_event_bytes` sets another).
pub const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseItem {
    /// The `data:` lines of one event, joined with `\n`.
    Data(String),
    /// Text outside any `data:` line (e.g. a pretty-printed error object).
    Other(String),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    #[error("an event is not valid UTF-8")]
    NotUtf8,
    #[error("an event grew past {0} bytes without ending")]
    TooLarge(usize),
}

#[derive(Debug)]
pub struct SseParser {
    buffer: Vec<u8>,
    /// Where to resume looking for a separator, so that a large event
    /// arriving in many pieces is scanned once, not once per piece.
    scanned: usize,
    max_event_bytes: usize,
}

impl Default for SseParser {
    fn default() -> SseParser {
        SseParser::with_max_event_bytes(MAX_EVENT_BYTES)
    }
}

impl SseParser {
    pub fn new() -> SseParser {
        SseParser::default()
    }

    /// A parser that refuses any event larger than `max` bytes: a peer that
    /// never ends an event cannot make it buffer more than about that.
    pub fn with_max_event_bytes(max: usize) -> SseParser {
        SseParser {
            buffer: Vec::new(),
            scanned: 0,
            max_event_bytes: max,
        }
    }

    pub fn push(&mut self, bytes: &[u8]) {
        self.buffer.extend_from_slice(bytes);
    }

    /// The next complete event, if one has fully arrived. Empty events
    /// (keep-alives, comments only) are skipped.
    pub fn next_item(&mut self) -> Result<Option<SseItem>, SseError> {
        loop {
            let Some((end, separator_len)) = find_separator(&self.buffer, self.scanned) else {
                if self.buffer.len() > self.max_event_bytes {
                    return Err(SseError::TooLarge(self.max_event_bytes));
                }
                // A separator may straddle this piece and the next (at most 3 bytes back).
                self.scanned = self.buffer.len().saturating_sub(3);
                return Ok(None);
            };
            if end > self.max_event_bytes {
                return Err(SseError::TooLarge(self.max_event_bytes));
            }
            let event: Vec<u8> = self.buffer.drain(..end + separator_len).take(end).collect();
            self.scanned = 0;
            if let Some(item) = parse_event(&event)? {
                return Ok(Some(item));
            }
        }
    }

    /// At the end of the stream: whatever is left, as a last event.
    pub fn finish(&mut self) -> Result<Option<SseItem>, SseError> {
        let rest = std::mem::take(&mut self.buffer);
        self.scanned = 0;
        parse_event(&rest)
    }
}

/// The earliest blank line at or after `from`: its start and its length.
fn find_separator(buffer: &[u8], from: usize) -> Option<(usize, usize)> {
    let mut index = from;
    while index + 1 < buffer.len() {
        match (buffer[index], buffer[index + 1]) {
            (b'\n', b'\n') => return Some((index, 2)),
            (b'\r', b'\n') if buffer.get(index + 2..index + 4) == Some(b"\r\n") => {
                return Some((index, 4));
            }
            (b'\r', b'\n') if index + 3 >= buffer.len() => return None,
            (b'\r', b'\r') => return Some((index, 2)),
            _ => index += 1,
        }
    }
    None
}

fn parse_event(bytes: &[u8]) -> Result<Option<SseItem>, SseError> {
    let text = std::str::from_utf8(bytes).map_err(|_| SseError::NotUtf8)?;
    let mut data: Vec<&str> = Vec::new();
    let mut other: Vec<&str> = Vec::new();
    for line in text.split(['\n', '\r']) {
        if let Some(value) = line.strip_prefix("data:") {
            data.push(value.strip_prefix(' ').unwrap_or(value));
        } else if line.is_empty()
            || line.starts_with(':')
            || ["event:", "id:", "retry:"]
                .iter()
                .any(|field| line.starts_with(field))
        {
            continue;
        } else {
            other.push(line);
        }
    }
    Ok(if !data.is_empty() {
        Some(SseItem::Data(data.join("\n")))
    } else if !other.is_empty() {
        Some(SseItem::Other(other.join("\n")))
    } else {
        None
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(pieces: &[&[u8]]) -> Vec<SseItem> {
        let mut parser = SseParser::new();
        let mut items = Vec::new();
        for piece in pieces {
            parser.push(piece);
            while let Some(item) = parser.next_item().unwrap() {
                items.push(item);
            }
        }
        items.extend(parser.finish().unwrap());
        items
    }

    #[test]
    fn events_end_at_any_blank_line_style() {
        let items = parse_all(&[b"data: a\r\n\r\ndata: b\n\ndata: c\r\rdata: d"]);
        let data: Vec<SseItem> = ["a", "b", "c", "d"]
            .iter()
            .map(|s| SseItem::Data(s.to_string()))
            .collect();
        assert_eq!(items, data);
    }

    #[test]
    fn a_separator_split_across_pieces_is_found_once() {
        let items = parse_all(&[b"data: {\"x\":1}\r\n", b"\r", b"\ndata: {\"x\":2}\r\n\r\n"]);
        assert_eq!(
            items,
            [
                SseItem::Data("{\"x\":1}".into()),
                SseItem::Data("{\"x\":2}".into())
            ]
        );
    }

    #[test]
    fn a_character_split_across_pieces_is_decoded_whole() {
        let bytes = "data: £\r\n\r\n".as_bytes();
        let items = parse_all(&[&bytes[..7], &bytes[7..]]);
        assert_eq!(items, [SseItem::Data("£".into())]);
    }

    #[test]
    fn multi_line_data_comments_and_fields() {
        let items = parse_all(&[b": keep-alive\n\nevent: x\nid: 1\ndata: one\ndata:two\n\n"]);
        assert_eq!(items, [SseItem::Data("one\ntwo".into())]);
    }

    #[test]
    fn a_bare_json_error_after_events_is_its_own_item() {
        let body = b"data: {\"a\":1}\n\n{\n  \"error\": {\n    \"code\": 499\n  }\n}\n";
        let items = parse_all(&[body]);
        assert_eq!(
            items[1],
            SseItem::Other("{\n  \"error\": {\n    \"code\": 499\n  }\n}".into())
        );
    }

    #[test]
    fn invalid_utf8_is_an_error_not_a_panic() {
        let mut parser = SseParser::new();
        parser.push(b"data: \xff\n\n");
        assert_eq!(parser.next_item(), Err(SseError::NotUtf8));
    }
}
