//! A model call's answer text kept once in its run log (schema 5): its
//! `text` records hold it, so the `model_call` record leaves out its
//! `text` and the provider state's plain copies of it (nulled where they
//! stood, named by `textFromEvents`), and a reader puts them back. Signed
//! parts (Gemini's thought signatures) are opaque and kept whole: only the
//! strings the provider names as plain answer text are left out
//! (`provider::plain_text_slots`), and only when they are the whole
//! answer, so that putting them back gives the state byte for byte.

use serde_json::Value;

use crate::chat::service::ModelCallRecord;

/// The most copies of the answer one `model_call` record may leave out: a
/// real call has one (OpenAI's `content`, Gemini's merged plain part); a
/// hand-made log naming more would have a reader copy the answer once per
/// name.
pub const MAX_LEFT_OUT_TEXTS: usize = 4;

/// The pointer to a call's provider state within its record.
const STATE: &str = "/summary/providerState";

/// Why a `model_call` record's left-out text cannot be put back.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LeftOutError {
    #[error("`textFromEvents` names {0} places; at most {max} are read", max = MAX_LEFT_OUT_TEXTS)]
    TooMany(usize),
    #[error("the call has `text` and `textFromEvents` both")]
    TextTwice,
    #[error(
        "`textFromEvents` names `{0}`, which is not a left-out text (null) in the call's providerState"
    )]
    NotLeftOut(String),
}

/// `call` as its record holds it when its text records hold its text:
/// without `text`, and with each plain copy of that text in its provider
/// state nulled; beside it, where those copies stood (`textFromEvents`).
pub fn leave_out(call: &ModelCallRecord) -> serde_json::Result<(Value, Vec<String>)> {
    let mut record = serde_json::to_value(call)?;
    if let Value::Object(fields) = &mut record {
        // `shift_remove`: the record keeps its fields' order.
        fields.shift_remove("text");
    }
    let mut left_out = Vec::new();
    let Some(state) = record.pointer_mut(STATE) else {
        return Ok((record, left_out));
    };
    for slot in crate::provider::plain_text_slots(state) {
        if call.text.is_empty() || left_out.len() == MAX_LEFT_OUT_TEXTS {
            break;
        }
        if let Some(copy) = state.pointer_mut(&slot)
            && copy.as_str() == Some(call.text.as_str())
        {
            *copy = Value::Null;
            left_out.push(slot);
        }
    }
    Ok((record, left_out))
}

/// Puts back into `call` the text its record left out: `streamed`, the
/// text of its `text` records, as its `text` and at each of `left_out` in
/// its provider state.
pub fn put_back(
    call: &mut ModelCallRecord,
    streamed: String,
    left_out: &[String],
) -> Result<(), LeftOutError> {
    if left_out.len() > MAX_LEFT_OUT_TEXTS {
        return Err(LeftOutError::TooMany(left_out.len()));
    }
    if !call.text.is_empty() {
        return Err(LeftOutError::TextTwice);
    }
    for slot in left_out {
        let state = call
            .summary
            .as_mut()
            .and_then(|summary| summary.provider_state.as_mut());
        match state.and_then(|state| state.pointer_mut(slot)) {
            Some(copy @ Value::Null) => *copy = Value::String(streamed.clone()),
            _ => return Err(LeftOutError::NotLeftOut(crate::text::quote(slot))),
        }
    }
    call.text = streamed;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::CallSummary;
    use proptest::prelude::*;
    use serde_json::json;

    fn call(text: &str, state: Value) -> ModelCallRecord {
        ModelCallRecord {
            round: 1,
            started_ms: 3,
            latency_ms: 40,
            first_text_ms: Some(9),
            tool_results_in: Vec::new(),
            text: text.to_string(),
            tool_calls: Vec::new(),
            summary: Some(CallSummary {
                provider_state: Some(state),
                ..CallSummary::default()
            }),
            error: None,
        }
    }

    /// The record as a log holds it, read back and given its text again.
    fn round_trip(call: &ModelCallRecord) -> (Value, Vec<String>, ModelCallRecord) {
        let (record, left_out) = leave_out(call).unwrap();
        let mut read: ModelCallRecord = serde_json::from_value(record.clone()).unwrap();
        put_back(&mut read, call.text.clone(), &left_out).unwrap();
        (record, left_out, read)
    }

    fn same(a: &ModelCallRecord, b: &ModelCallRecord) -> bool {
        serde_json::to_string(a).unwrap() == serde_json::to_string(b).unwrap()
    }

    #[test]
    fn an_openai_answer_is_left_out_of_its_message_and_put_back_byte_for_byte() {
        let state = json!({"openai": {"message": {"role": "assistant", "content": "The excess is £350.", "refusal": "x"}}});
        let original = call("The excess is £350.", state);
        let (record, left_out, read) = round_trip(&original);
        assert_eq!(left_out, ["/openai/message/content"]);
        assert!(record.get("text").is_none());
        assert_eq!(
            record["summary"]["providerState"].to_string(),
            r#"{"openai":{"message":{"role":"assistant","content":null,"refusal":"x"}}}"#
        );
        assert!(same(&read, &original));
    }

    /// Gemini's signed parts are opaque: even when a signed part's text
    /// is the whole answer it stays, and only a plain part is left out.
    #[test]
    fn a_gemini_answer_leaves_signed_parts_whole() {
        let plain = json!({"gemini": {"parts": [{"text": "Hi."}, {"text": "", "thoughtSignature": "c2ln"}]}});
        let (record, left_out, read) = round_trip(&call("Hi.", plain.clone()));
        assert_eq!(left_out, ["/gemini/parts/0/text"]);
        assert_eq!(
            record["summary"]["providerState"]["gemini"]["parts"][0],
            json!({"text": null})
        );
        assert!(same(&read, &call("Hi.", plain)));
        let signed = json!({"gemini": {"parts": [{"text": "Hi.", "thoughtSignature": "c2ln"}]}});
        let (record, left_out, _) = round_trip(&call("Hi.", signed.clone()));
        assert!(left_out.is_empty());
        assert_eq!(record["summary"]["providerState"], signed);
        // An answer in pieces (a signed piece between plain ones) is kept.
        let pieces = json!({"gemini": {"parts": [{"text": "H"}, {"text": "i", "thoughtSignature": "c2ln"}, {"text": "."}]}});
        let (record, left_out, _) = round_trip(&call("Hi.", pieces.clone()));
        assert!(left_out.is_empty());
        assert_eq!(record["summary"]["providerState"], pieces);
    }

    #[test]
    fn a_record_whose_left_out_text_cannot_be_put_back_is_an_error() {
        let state = json!({"openai": {"message": {"role": "assistant", "content": null}}});
        let mut read = call("", state);
        let many: Vec<String> = (0..5).map(|_| "/openai/message/content".into()).collect();
        assert_eq!(
            put_back(&mut read.clone(), "a".into(), &many),
            Err(LeftOutError::TooMany(5))
        );
        for slot in [
            "/openai/message/role",
            "/openai/nothing",
            "",
            "not a pointer",
        ] {
            assert_eq!(
                put_back(&mut read.clone(), "a".into(), &[slot.to_string()]),
                Err(LeftOutError::NotLeftOut(slot.to_string()))
            );
        }
        let mut twice = read.clone();
        twice.text = "a".into();
        assert_eq!(
            put_back(&mut twice, "a".into(), &[]),
            Err(LeftOutError::TextTwice)
        );
        read.summary = None;
        assert!(put_back(&mut read, "a".into(), &["/openai/message/content".into()]).is_err());
    }

    fn any_state() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            "[a-c£]{0,3}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec(
                    (
                        "(text|parts|gemini|openai|message|content|thoughtSignature)",
                        inner
                    ),
                    0..4
                )
                .prop_map(|fields| Value::Object(fields.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Whatever a provider state holds, what a log keeps of it reads
        /// back as it was.
        #[test]
        fn any_call_reads_back_as_it_was(text in "[a-c£]{0,3}", state in any_state(), wrap in 0..3u8) {
            let state = match wrap {
                0 => json!({"gemini": {"parts": [state, {"text": text.clone()}]}}),
                1 => json!({"openai": {"message": {"content": text.clone(), "other": state}}}),
                _ => state,
            };
            let original = call(&text, state);
            let (_, _, read) = round_trip(&original);
            // As a log that keeps the call whole reads it back (a state
            // that is `null` reads as none, as it always has).
            let whole: ModelCallRecord =
                serde_json::from_str(&serde_json::to_string(&original).unwrap()).unwrap();
            prop_assert!(same(&read, &whole));
        }

        /// Any names and any state: an error at worst, never a panic.
        #[test]
        fn putting_back_never_panics(state in any_state(), slots in prop::collection::vec("(/[a-z0-9~]{0,8}){0,4}", 0..6), text in ".{0,4}") {
            let mut read = call("", state);
            let _ = put_back(&mut read, text, &slots);
        }
    }
}
