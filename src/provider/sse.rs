//! An incremental Server-Sent Events parser by the WHATWG rules
//! (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation),
//! in the style of mini-redis's frame parser: feed it bytes as they arrive,
//! take out whatever complete events are there, and the rest waits for more.
//!
//! It reads lines: a CR, a LF or a CRLF ends one, and a CR that ends a piece
//! is taken as a line end at once (a LF opening the next piece is then the
//! rest of that CRLF), so an event is delivered as soon as its blank line has
//! arrived. A leading byte-order mark is skipped; comments are ignored;
//! `data:`, `event:`, `id:` and `retry:` fields are read as the standard
//! says. Any chunking gives the same events — a piece may end inside a UTF-8
//! character or a CRLF — because a line is only decoded once it has ended.
//!
//! Two additions for Google's API, which reports an error in the middle of a
//! 200 response as a bare JSON object: lines of no known field, in an event
//! without data, come out as `SseItem::Other`; and at the end of the stream
//! (`finish`) an event whose blank line never came is still delivered (the
//! standard discards it; that error object ends the body without one).
//! `tests/it/sse_property.rs` compares the events with npm `eventsource-parser`.

/// The most one event may hold before the stream is refused as malformed
/// (the default; `SseParser::with_max_event_bytes` sets another).
pub const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// What the providers read: an event's data, or text outside any field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseItem {
    /// The `data:` lines of one event, joined with `\n`.
    Data(String),
    /// Lines of no known field in an event without data (e.g. a
    /// pretty-printed error object), joined with `\n`.
    Other(String),
}

/// One dispatched event, with the fields it set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// Its `event:` type; `None` when unset or empty (a `message`).
    pub event: Option<String>,
    /// The `id:` this event set, if any. (The last event ID that carries
    /// over to later events is a client's state, as in `eventsource-parser`.)
    pub id: Option<String>,
    pub data: String,
}

/// Everything the stream says, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseMessage {
    Event(SseEvent),
    /// A valid `retry:` field: the reconnection time in milliseconds.
    Retry(u64),
    /// See `SseItem::Other`.
    Other(String),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    #[error("an event is not valid UTF-8")]
    NotUtf8,
    #[error("an event grew past {0} bytes without ending")]
    TooLarge(usize),
}

/// The fields of the event being read, until its blank line.
#[derive(Debug, Default)]
struct PendingEvent {
    event: Option<String>,
    id: Option<String>,
    data: String,
    data_lines: usize,
    other: Vec<String>,
    /// Bytes held for this event, for the cap.
    bytes: usize,
}

#[derive(Debug)]
pub struct SseParser {
    buffer: Vec<u8>,
    /// Where the line being read starts in `buffer`.
    start: usize,
    /// How far past `start` has been searched for a line end, so that a long
    /// line arriving in many pieces is scanned once, not once per piece.
    scanned: usize,
    /// The last line ended with a CR: a LF next belongs to it.
    after_cr: bool,
    /// Nothing has been read yet: a byte-order mark may come first.
    at_start: bool,
    pending: PendingEvent,
    max_event_bytes: usize,
}

impl Default for SseParser {
    fn default() -> SseParser {
        SseParser::with_max_event_bytes(MAX_EVENT_BYTES)
    }
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

impl SseParser {
    pub fn new() -> SseParser {
        SseParser::default()
    }

    /// A parser that refuses any event larger than `max` bytes: a peer that
    /// never ends an event cannot make it buffer more than about that.
    pub fn with_max_event_bytes(max: usize) -> SseParser {
        SseParser {
            buffer: Vec::new(),
            start: 0,
            scanned: 0,
            after_cr: false,
            at_start: true,
            pending: PendingEvent::default(),
            max_event_bytes: max,
        }
    }

    pub fn push(&mut self, bytes: &[u8]) {
        if self.start > 0 {
            self.buffer.drain(..self.start);
            self.start = 0;
        }
        self.buffer.extend_from_slice(bytes);
    }

    /// The next complete event's data (or `Other` text), if one has fully
    /// arrived. Events without data (keep-alives, comments) are skipped.
    pub fn next_item(&mut self) -> Result<Option<SseItem>, SseError> {
        while let Some(message) = self.next_message()? {
            match message {
                SseMessage::Event(event) => return Ok(Some(SseItem::Data(event.data))),
                SseMessage::Other(text) => return Ok(Some(SseItem::Other(text))),
                SseMessage::Retry(_) => {}
            }
        }
        Ok(None)
    }

    /// The next thing the stream says, once the line that completes it has
    /// arrived.
    pub fn next_message(&mut self) -> Result<Option<SseMessage>, SseError> {
        loop {
            if self.at_start && !self.skip_bom() {
                return Ok(None);
            }
            if self.after_cr && self.start < self.buffer.len() {
                self.after_cr = false;
                if self.buffer[self.start] == b'\n' {
                    self.start += 1;
                }
            }
            let Some(end) = self.line_end() else {
                let held = self.buffer.len() - self.start;
                if held.saturating_add(self.pending.bytes) > self.max_event_bytes {
                    return Err(SseError::TooLarge(self.max_event_bytes));
                }
                return Ok(None);
            };
            let line_start = self.start;
            self.after_cr = self.buffer[end] == b'\r';
            self.start = end + 1;
            self.scanned = 0;
            let line = &self.buffer[line_start..end];
            if let Some(message) = self.pending.read_line(line, self.max_event_bytes)? {
                return Ok(Some(message));
            }
        }
    }

    /// At the end of the stream, after `next_item` has returned `None`: the
    /// event whose blank line never came, if any.
    pub fn finish(&mut self) -> Result<Option<SseItem>, SseError> {
        self.at_start = false;
        self.after_cr = false;
        let rest = self.buffer.split_off(self.start);
        self.buffer.clear();
        self.start = 0;
        self.scanned = 0;
        if !rest.is_empty() {
            self.pending.read_line(&rest, self.max_event_bytes)?;
        }
        Ok(match self.pending.dispatch() {
            Some(SseMessage::Event(event)) => Some(SseItem::Data(event.data)),
            Some(SseMessage::Other(text)) => Some(SseItem::Other(text)),
            Some(SseMessage::Retry(_)) | None => None,
        })
    }

    /// Drops a leading byte-order mark; false while too few bytes have come
    /// to tell.
    fn skip_bom(&mut self) -> bool {
        let head = &self.buffer[self.start..];
        let prefix = head.len().min(BOM.len());
        if head[..prefix] != BOM[..prefix] {
            self.at_start = false;
        } else if prefix == BOM.len() {
            self.start += BOM.len();
            self.at_start = false;
        }
        !self.at_start
    }

    /// Where the line being read ends (its CR or LF), if it has.
    fn line_end(&mut self) -> Option<usize> {
        let from = self.start + self.scanned;
        let found = self.buffer[from..]
            .iter()
            .position(|byte| matches!(byte, b'\r' | b'\n'));
        match found {
            Some(offset) => Some(from + offset),
            None => {
                self.scanned = self.buffer.len() - self.start;
                None
            }
        }
    }
}

impl PendingEvent {
    /// One line by the standard's field rules.
    fn read_line(
        &mut self,
        line: &[u8],
        max_event_bytes: usize,
    ) -> Result<Option<SseMessage>, SseError> {
        if line.is_empty() {
            return Ok(self.dispatch());
        }
        let line = std::str::from_utf8(line).map_err(|_| SseError::NotUtf8)?;
        if line.starts_with(':') {
            return Ok(None);
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        self.bytes = self.bytes.saturating_add(line.len());
        if self.bytes > max_event_bytes {
            return Err(SseError::TooLarge(max_event_bytes));
        }
        match field {
            "data" => {
                if self.data_lines > 0 {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.data_lines += 1;
            }
            "event" => self.event = Some(value.to_string()),
            "id" if !value.contains('\0') => self.id = Some(value.to_string()),
            "id" => {}
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                return Ok(Some(SseMessage::Retry(value.parse().unwrap_or(u64::MAX))));
            }
            "retry" => {}
            _ => self.other.push(line.to_string()),
        }
        Ok(None)
    }

    /// A blank line: the event read so far, if it has data (or other text).
    fn dispatch(&mut self) -> Option<SseMessage> {
        let pending = std::mem::take(self);
        if pending.data_lines > 0 {
            Some(SseMessage::Event(SseEvent {
                event: pending.event.filter(|event| !event.is_empty()),
                id: pending.id,
                data: pending.data,
            }))
        } else if !pending.other.is_empty() {
            Some(SseMessage::Other(pending.other.join("\n")))
        } else {
            None
        }
    }
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

    fn data(texts: &[&str]) -> Vec<SseItem> {
        texts.iter().map(|s| SseItem::Data(s.to_string())).collect()
    }

    #[test]
    fn events_end_at_any_blank_line_style() {
        let items = parse_all(&[b"data: a\r\n\r\ndata: b\n\ndata: c\r\rdata: d"]);
        assert_eq!(items, data(&["a", "b", "c", "d"]));
    }

    #[test]
    fn any_line_end_ends_a_line_so_lf_then_crlf_is_a_blank_line() {
        // Issue #27: this was one event "a\nb".
        assert_eq!(parse_all(&[b"data: a\n\r\ndata: b\n\n"]), data(&["a", "b"]));
    }

    #[test]
    fn an_event_is_delivered_as_soon_as_its_blank_line_arrives() {
        // Issue #27: `data: a\r\n\n` was held until more bytes came.
        for piece in [&b"data: a\r\n\n"[..], b"data: a\n\r", b"data: a\r\r"] {
            let mut parser = SseParser::new();
            parser.push(piece);
            assert_eq!(parser.next_item(), Ok(Some(SseItem::Data("a".into()))));
        }
    }

    #[test]
    fn a_cr_ending_a_piece_and_a_lf_opening_the_next_are_one_line_end() {
        let items = parse_all(&[b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"]);
        assert_eq!(items, data(&["a\nb"]));
    }

    #[test]
    fn a_separator_split_across_pieces_is_found_once() {
        let items = parse_all(&[b"data: {\"x\":1}\r\n", b"\r", b"\ndata: {\"x\":2}\r\n\r\n"]);
        assert_eq!(items, data(&["{\"x\":1}", "{\"x\":2}"]));
    }

    #[test]
    fn a_character_split_across_pieces_is_decoded_whole() {
        let bytes = "data: £\r\n\r\n".as_bytes();
        let items = parse_all(&[&bytes[..7], &bytes[7..]]);
        assert_eq!(items, data(&["£"]));
    }

    #[test]
    fn a_leading_byte_order_mark_is_skipped_even_split() {
        let items = parse_all(&[b"\xEF", b"\xBB", b"\xBFdata: a\n\n\xEF\xBB\xBFdata: b\n\n"]);
        assert_eq!(
            items,
            vec![
                SseItem::Data("a".into()),
                SseItem::Other("\u{feff}data: b".into())
            ]
        );
    }

    #[test]
    fn multi_line_data_comments_and_fields() {
        let mut parser = SseParser::new();
        parser.push(b": keep-alive\n\nevent: x\nid: 1\nretry: 250\nretry: 1s\ndata: one\ndata:two\ndata\n\n");
        assert_eq!(parser.next_message(), Ok(Some(SseMessage::Retry(250))));
        let event = SseEvent {
            event: Some("x".into()),
            id: Some("1".into()),
            data: "one\ntwo\n".into(),
        };
        assert_eq!(parser.next_message(), Ok(Some(SseMessage::Event(event))));
        assert_eq!(parser.next_message(), Ok(None));
    }

    #[test]
    fn an_id_holding_nul_is_ignored() {
        let mut parser = SseParser::new();
        parser.push(b"id: 7\nid: a\0b\ndata: x\n\n");
        let Ok(Some(SseMessage::Event(event))) = parser.next_message() else {
            panic!("an event");
        };
        assert_eq!(event.id.as_deref(), Some("7"));
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

    #[test]
    fn an_event_past_the_cap_is_refused_whether_or_not_its_lines_end() {
        let mut parser = SseParser::with_max_event_bytes(16);
        parser.push(b"data: 0123456789abcdef");
        assert_eq!(parser.next_item(), Err(SseError::TooLarge(16)));
        let mut parser = SseParser::with_max_event_bytes(16);
        parser.push(b"data: 01234\ndata: 56789\n");
        assert_eq!(parser.next_item(), Err(SseError::TooLarge(16)));
    }
}
