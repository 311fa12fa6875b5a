use super::*;
use proptest::prelude::*;
use serde::de::IgnoredAny;

/// serde_json's verdict on the value at the start of `b`, as the block scanner asks it.
fn serde(b: &[u8]) -> Option<Result<usize, serde_json::Error>> {
    let mut it = serde_json::Deserializer::from_slice(b).into_iter::<IgnoredAny>();
    it.next().map(|r| r.map(|_| it.byte_offset()))
}

/// The skipper's contract (see the module's doc).
fn check(b: &[u8]) -> Skip {
    let s = skip_value(b);
    match s {
        Skip::Done(n) => assert_eq!(
            serde(b).map(|r| r.ok()),
            Some(Some(n)),
            "{:?}",
            String::from_utf8_lossy(b)
        ),
        // No syntax error so far: serde_json stops at the end (a cut number, "-" or "1.",
        // is an error there), or ends a scalar there.
        Skip::NeedMore => match serde(b) {
            Some(Err(e)) => assert!(e.is_eof() || at_end(b, &e), "{e}: {:?}", String::from_utf8_lossy(b)),
            Some(Ok(n)) => assert_eq!(n, b.len(), "{:?}", String::from_utf8_lossy(b)),
            None => {}
        },
        Skip::Unsure => {}
    }
    s
}

#[test]
fn values_and_their_ends() {
    for (json, want) in [
        (&b"{}"[..], Skip::Done(2)),
        (b"[] ,", Skip::Done(2)),
        (
            b"{\"a\": [1, -2.5e+3, true, false, null, \"x\\\"\\u00e9\\n\"], \"b\": {}}x",
            Skip::Done(62),
        ),
        (b"\"\" 1", Skip::Done(2)),
        (b"12 ", Skip::Done(2)),
        (b"0,", Skip::Done(1)),
        (b"true}", Skip::Done(4)),
        (b"12", Skip::NeedMore),
        (b"1.", Skip::NeedMore),
        (b"-", Skip::NeedMore),
        (b"tr", Skip::NeedMore),
        (b"{\"a\": [1, 2", Skip::NeedMore),
        (b"\"abc\\", Skip::NeedMore),
        (b"\"\\u00", Skip::NeedMore),
        (b"[1,]", Skip::Unsure),
        (b"[1 2]", Skip::Unsure),
        (b"{\"a\" 1}", Skip::Unsure),
        (b"{1: 2}", Skip::Unsure),
        (b"{\"a\": 1,}", Skip::Unsure),
        (b"01 ", Skip::Unsure),
        (b"1.e3 ", Skip::Unsure),
        (b"-a", Skip::Unsure),
        (b"\"\\q\"", Skip::Unsure),
        (b"\"\\u00zz\"", Skip::Unsure),
        (b"\"a\x01\"", Skip::Unsure),
        (b"\"a\nb\"", Skip::Unsure),
        (b"trux", Skip::Unsure),
        (b"1x", Skip::Unsure),
        (b"[}", Skip::Unsure),
        (b"{]", Skip::Unsure),
    ] {
        assert_eq!(check(json), want, "{:?}", String::from_utf8_lossy(json));
    }
    // Deeper than the limit: serde_json decides.
    let deep = format!("{}{} ", "[".repeat(70), "]".repeat(70));
    assert_eq!(check(deep.as_bytes()), Skip::Unsure);
    let ok = format!("{}{}", "[".repeat(64), "]".repeat(64));
    assert_eq!(check(ok.as_bytes()), Skip::Done(128));
}

#[test]
fn string_stop_finds_the_first_stop_in_every_lane() {
    for len in 0..40 {
        for at in 0..len {
            for stop in [b'"', b'\\', 0x00, 0x1f, b'\n'] {
                let mut b = vec![b'a'; len];
                // Bytes that look like stops to a sloppy test: 0x20, 0x7f, 0x80, 0xff.
                for (k, x) in b.iter_mut().enumerate() {
                    *x = [b'a', 0x20, 0x7f, 0x80, 0xff, b'#', b']'][k % 7];
                }
                b[at] = stop;
                assert_eq!(string_stop(&b, 0), Some(at), "len {len}, at {at}, stop {stop}");
                assert_eq!(swar_stop(&b, 0), Some(at), "len {len}, at {at}, stop {stop}");
                if at + 1 < len {
                    b[at + 1] = b'"';
                    assert_eq!(string_stop(&b, 0), Some(at));
                }
            }
        }
        assert_eq!(string_stop(&vec![b'a'; len], 0), None);
        assert_eq!(swar_stop(&vec![0x80; len], 0), None);
    }
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(serde_json::Value::from),
        "[a-z\"\\\\/\u{0}-\u{1f}é€😀 |]{0,12}".prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(5, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::from),
            proptest::collection::btree_map("[a-z\"\\\\]{0,4}", inner, 0..6)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Valid JSON, compact or pretty, is accepted outright (the fast path is taken),
    /// and every prefix and every corruption of it keeps the contract.
    #[test]
    fn agrees_with_serde_json(v in json_value(), pretty in any::<bool>(), cut in 0usize..1000, byte in any::<u8>()) {
        let mut b = if pretty { serde_json::to_vec_pretty(&v).unwrap() } else { serde_json::to_vec(&v).unwrap() };
        let n = b.len();
        b.push(b' ');
        prop_assert_eq!(check(&b), Skip::Done(n));
        let cut = cut % (n + 1);
        check(&b[..cut]);
        let mut bad = b.clone();
        bad[cut % n] = byte;
        check(&bad);
        check(&bad[..cut]);
    }

    #[test]
    fn agrees_with_serde_json_on_json_like_bytes(s in r#"[{}\[\]":,0-9a-z.eE+\-\\ \n]{0,64}"#) {
        check(s.as_bytes());
    }
}
