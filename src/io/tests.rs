//! Unit tests of the readers over in-memory inputs.

use std::io::{Cursor, Write};

use super::read::{format_from_head, format_from_name};
use super::*;

fn read_all(name: &str, data: &[u8], opts: &ReadOptions) -> Vec<Result<SourceRecord, Reject>> {
    read::from_reader(name, Cursor::new(data.to_vec()), opts).unwrap().map(|i| i.unwrap()).collect()
}

fn texts(items: &[Result<SourceRecord, Reject>]) -> Vec<(String, String)> {
    items
        .iter()
        .filter_map(|r| r.as_ref().ok())
        .map(|r| match &r.content {
            Content::Text(t) => (r.key.clone(), t.clone()),
            other => (r.key.clone(), format!("{other:?}")),
        })
        .collect()
}

fn rejects(items: &[Result<SourceRecord, Reject>]) -> Vec<(String, RejectReason)> {
    items.iter().filter_map(|r| r.as_ref().err()).map(|r| (r.origin.to_string(), r.reason.clone())).collect()
}

#[test]
fn formats_are_named_by_extension_and_first_bytes() {
    let f = |n: &str| format_from_name(std::path::Path::new(n));
    assert_eq!(f("a.jsonl"), Some(Format::Jsonl));
    assert_eq!(f("a.JSONL.GZ"), Some(Format::Jsonl));
    assert_eq!(f("dir/a.ndjson.zst"), Some(Format::Jsonl));
    assert_eq!(f("a.csv.gz"), Some(Format::Csv));
    assert_eq!(f("a.tsv"), Some(Format::Tsv));
    assert_eq!(f("a.parquet"), Some(Format::Parquet));
    assert_eq!(f("fp.u64"), Some(Format::U64));
    assert_eq!(f("a.gz"), None);
    assert_eq!(f("README"), None);
    assert_eq!(format_from_head(b"PAR1\x15\x04"), Some(Format::Parquet));
    assert_eq!(format_from_head(b"\xef\xbb\xbf \n{\"id\":1}"), Some(Format::Jsonl));
    assert_eq!(format_from_head(b"id,text\n"), None);
}

#[test]
fn jsonl_picks_id_and_text_and_ignores_the_rest() {
    let data = b"\xef\xbb\xbf{\"id\": \"d0\", \"text\": \"Hello world\", \"url\": \"u\", \"meta\": {\"len\": 11}}\r\n\n  \n{\"key\": \"k1\", \"text\": \"two\"}\n{\"id\": 7, \"text\": \"three\"}\n{\"text\": \"no id\"}";
    let items = read_all("in.jsonl", data, &ReadOptions::default());
    assert_eq!(
        texts(&items),
        [("d0", "Hello world"), ("k1", "two"), ("7", "three"), ("in.jsonl:6", "no id")]
            .map(|(a, b)| (a.into(), b.into()))
    );
    let ok = items[3].as_ref().unwrap();
    assert_eq!((ok.id.as_deref(), ok.origin.position()), (None, Position::Line(6)));
}

#[test]
fn every_bad_record_is_rejected_with_its_line_and_reason() {
    let long = "k".repeat(1025);
    let data = format!(
        "{{\"id\":\"a\",\"text\":\"ok one\"}}\n{{\"id\":\"b\",\"text\":\"\"}}\n{{\"id\":\"c\",\"text\":\" ,.; \"}}\n{{\"id\":\"d\"}}\n{{\"id\":\"e\",\"text\":\n{{\"id\":\"f\",\"text\":404}}\n[1,2]\n{{\"id\":\"{long}\",\"text\":\"x\"}}\n{{\"id\":\"a\",\"text\":\"again\"}}\n{{\"id\":\"g\",\"text\":\"ok two\"}}\n"
    );
    let mut bytes = data.into_bytes();
    bytes.extend_from_slice(b"{\"id\":\"h\",\"text\":\"bad \xff byte\"}\n");
    let items = read_all("x.jsonl", &bytes, &ReadOptions::default());
    // Punctuation is read: whether it has tokens is the collection's tokenizer's decision.
    let want = [("a", "ok one"), ("c", " ,.; "), ("g", "ok two")];
    assert_eq!(texts(&items), want.map(|(a, b)| (a.into(), b.into())));
    let got = rejects(&items);
    let reasons: Vec<(&str, &RejectReason)> = got.iter().map(|(o, r)| (o.as_str(), r)).collect();
    assert_eq!(reasons[0], ("x.jsonl:2", &RejectReason::EmptyText));
    assert_eq!(reasons[1], ("x.jsonl:4", &RejectReason::MissingField("text".into())));
    assert!(matches!(reasons[2], ("x.jsonl:5", RejectReason::InvalidJson(_))));
    assert_eq!(reasons[3], ("x.jsonl:6", &RejectReason::NotAString { field: "text".into(), found: "number" }));
    assert_eq!(reasons[4], ("x.jsonl:7", &RejectReason::NotAnObject));
    assert_eq!(reasons[5], ("x.jsonl:8", &RejectReason::KeyTooLong { len: 1025, max: 1024 }));
    assert_eq!(reasons[6], ("x.jsonl:9", &RejectReason::DuplicateKey("a".into())));
    assert_eq!(reasons[7], ("x.jsonl:11", &RejectReason::InvalidUtf8 { offset: 22 }));
    assert_eq!(reasons.len(), 8);

    let lossy = ReadOptions { lossy_utf8: true, ..ReadOptions::default() };
    let items = read_all("x.jsonl", &bytes, &lossy);
    assert_eq!(texts(&items).last().unwrap().1, "bad \u{fffd} byte");
}

#[test]
fn strict_stops_at_the_first_reject() {
    let strict = ReadOptions { strict: true, ..ReadOptions::default() };
    let data = b"{\"id\":\"a\",\"text\":\"one\"}\n{\"id\":\"b\"}\n{\"id\":\"c\",\"text\":\"three\"}\n";
    let mut src = read::from_reader("s.jsonl", Cursor::new(data.to_vec()), &strict).unwrap();
    assert!(src.next().unwrap().unwrap().is_ok());
    match src.next().unwrap() {
        Err(ReadError::Rejected(r)) => assert_eq!(r.to_string(), "s.jsonl:2: missing field `text`"),
        other => panic!("{other:?}"),
    }
    assert!(src.next().is_none());
    assert_eq!((src.summary().records, src.summary().rejected), (1, 1));
}

#[test]
fn nested_fields_tokens_fingerprints_and_shell_records() {
    let nested = ReadOptions { text_field: "meta.body".into(), ..ReadOptions::default() };
    let data = b"{\"id\":\"a\",\"meta\":{\"body\":\"inner\"},\"text\":\"outer\"}\n{\"id\":\"b\",\"meta.body\":\"dotted key\"}\n{\"id\":\"c\",\"meta\":null}\n";
    let items = read_all("n.jsonl", data, &nested);
    assert_eq!(texts(&items), [("a", "inner"), ("b", "dotted key")].map(|(a, b)| (a.into(), b.into())));
    assert_eq!(rejects(&items), [("n.jsonl:3".into(), RejectReason::MissingField("meta.body".into()))]);

    let toks = ReadOptions { select: Select::Tokens, ..ReadOptions::default() };
    let data = b"{\"id\":\"a\",\"tokens\":[1,2,18446744073709551615]}\n{\"id\":\"b\",\"tokens\":[\"x y\",\"z\"]}\n{\"id\":\"c\",\"tokens\":[]}\n{\"id\":\"d\",\"tokens\":[1,\"x\"]}\n{\"id\":\"e\",\"tokens\":[-1]}\n";
    let items = read_all("t.jsonl", data, &toks);
    let ok: Vec<&Content> = items.iter().filter_map(|r| r.as_ref().ok()).map(|r| &r.content).collect();
    assert_eq!(ok, [&Content::Tokens(vec![1, 2, u64::MAX]), &Content::Terms(vec!["x y".into(), "z".into()])]);
    let bad: Vec<RejectReason> = rejects(&items).into_iter().map(|r| r.1).collect();
    assert_eq!(
        bad,
        [RejectReason::NoTokens, RejectReason::BadTokens("tokens".into()), RejectReason::BadTokens("tokens".into())]
    );

    let data = b"{\"key\":\"a\",\"text\":\"t\"}\n{\"key\":\"b\",\"tokens\":[5]}\n{\"key\":\"c\",\"simhash\":\"0xff\"}\n{\"key\":\"d\",\"simhash\":\"zz\"}\n{\"key\":\"e\",\"text\":\"t\",\"tokens\":[1]}\n{\"key\":\"f\"}\n";
    let items = read_all("shell.jsonl", data, &ReadOptions::shell_records());
    let ok: Vec<(&str, &Content)> =
        items.iter().filter_map(|r| r.as_ref().ok()).map(|r| (r.key.as_str(), &r.content)).collect();
    assert_eq!(
        ok,
        [("a", &Content::Text("t".into())), ("b", &Content::Tokens(vec![5])), ("c", &Content::Fingerprint(255))]
    );
    let bad = rejects(&items);
    assert!(matches!(&bad[0], (o, RejectReason::BadFingerprint { .. }) if o == "shell.jsonl:4"));
    assert!(matches!(&bad[1], (o, RejectReason::AmbiguousContent(_)) if o == "shell.jsonl:5"));
    assert_eq!(bad[2], ("shell.jsonl:6".into(), RejectReason::MissingField("text".into())));
}

#[test]
fn an_overlong_line_is_rejected_and_reading_goes_on() {
    let opts = ReadOptions { max_record_bytes: 64, ..ReadOptions::default() };
    let data = format!("{{\"id\":\"a\",\"text\":\"{}\"}}\n{{\"id\":\"b\",\"text\":\"short\"}}\n", "w ".repeat(200));
    let items = read_all("l.jsonl", data.as_bytes(), &opts);
    assert_eq!(rejects(&items), [("l.jsonl:1".into(), RejectReason::TooLarge { max: 64 })]);
    assert_eq!(texts(&items), [("b".into(), "short".into())]);
}

#[test]
fn gzip_members_and_zstd_frames_are_all_read() {
    let gz = |s: &str| {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(s.as_bytes()).unwrap();
        e.finish().unwrap()
    };
    let a = "{\"id\":\"a\",\"text\":\"one\"}\n";
    let b = "{\"id\":\"b\",\"text\":\"two\"}\n";
    let mut both = gz(a);
    both.extend(gz(b));
    let want: Vec<(String, String)> = [("a", "one"), ("b", "two")].map(|(a, b)| (a.into(), b.into())).to_vec();
    assert_eq!(texts(&read_all("x.jsonl.gz", &both, &ReadOptions::default())), want);
    // Detected from the magic bytes whatever the name says.
    assert_eq!(texts(&read_all("-", &both, &ReadOptions::default())), want);
    let mut zst = zstd::encode_all(a.as_bytes(), 3).unwrap();
    zst.extend(zstd::encode_all(b.as_bytes(), 3).unwrap());
    assert_eq!(texts(&read_all("x.jsonl.zst", &zst, &ReadOptions::default())), want);

    let capped = ReadOptions { max_input_bytes: 30, ..ReadOptions::default() };
    let mut src = read::from_reader("x.jsonl.zst", Cursor::new(zst), &capped).unwrap();
    assert!(src.next().unwrap().unwrap().is_ok());
    assert!(matches!(src.next(), Some(Err(ReadError::Io { .. }))));
    assert!(src.next().is_none());
}

#[test]
fn corrupt_compressed_input_is_a_read_error_naming_the_file() {
    let mut gz = {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all("{\"id\":\"a\",\"text\":\"one\"}\n".repeat(100).as_bytes()).unwrap();
        e.finish().unwrap()
    };
    let mid = gz.len() / 2;
    gz[mid] ^= 0xff;
    gz.truncate(gz.len() - 4);
    let src = read::from_reader("bad.jsonl.gz", Cursor::new(gz), &ReadOptions::default()).unwrap();
    let last = src.last().unwrap();
    let err = last.unwrap_err();
    assert!(err.to_string().starts_with("bad.jsonl.gz:"), "{err}");
}

#[test]
fn csv_and_tsv_read_quoted_fields_and_embedded_newlines() {
    let data = b"\xef\xbb\xbfid,text,url\nd0,\"Hello, \"\"world\"\"\nsecond line\",u0\nd1,plain,u1\nd2,too,many,fields\n,no id,u3\n";
    let items = read_all("c.csv", data, &ReadOptions::default());
    assert_eq!(
        texts(&items),
        [("d0", "Hello, \"world\"\nsecond line"), ("d1", "plain"), ("c.csv:6", "no id")]
            .map(|(a, b)| (a.into(), b.into()))
    );
    let origins: Vec<String> = items.iter().filter_map(|r| r.as_ref().ok()).map(|r| r.origin.to_string()).collect();
    assert_eq!(origins, ["c.csv:2", "c.csv:4", "c.csv:6"]);
    assert!(matches!(&rejects(&items)[..], [(o, RejectReason::Csv(_))] if o == "c.csv:5"));

    let tsv = b"key\ttext\na\tone two\n";
    assert_eq!(texts(&read_all("t.tsv", tsv, &ReadOptions::default())), [("a".into(), "one two".into())]);

    let err =
        read::from_reader("c.csv", Cursor::new(b"id,body\na,b\n".to_vec()), &ReadOptions::default()).err().unwrap();
    assert!(matches!(err, ReadError::MissingColumn { ref column, .. } if column == "text"), "{err}");

    let keep = ReadOptions { keep_raw: true, ..ReadOptions::default() };
    let items = read_all("c.csv", b"id,text,url\nd1,plain,u1\n", &keep);
    let Raw::Fields { names, values } = &items[0].as_ref().unwrap().raw else { panic!() };
    assert_eq!(
        (&names[..], &values[..]),
        (&["id", "text", "url"].map(String::from)[..], &["d1", "plain", "u1"].map(String::from)[..])
    );
}

#[test]
fn raw_u64_files_stream_rows_keyed_by_index() {
    let mut data = Vec::new();
    for v in [1u64, u64::MAX, 42] {
        data.extend_from_slice(&v.to_le_bytes());
    }
    let items = read_all("fp.u64", &data, &ReadOptions::default());
    let got: Vec<(String, Content)> = items.into_iter().map(|r| r.unwrap()).map(|r| (r.key, r.content)).collect();
    assert_eq!(
        got,
        [("0", 1u128), ("1", u128::from(u64::MAX)), ("2", 42)].map(|(k, v)| (k.to_string(), Content::Fingerprint(v)))
    );
    data.push(7);
    let src = read::from_reader("fp.u64", Cursor::new(data), &ReadOptions::default()).unwrap();
    let last = src.last().unwrap();
    assert!(matches!(last, Err(ReadError::Truncated { bytes: 25, .. })), "{last:?}");
}

#[test]
fn unknown_formats_are_refused() {
    let err = read::from_reader("-", Cursor::new(b"hello".to_vec()), &ReadOptions::default()).err().unwrap();
    assert!(matches!(err, ReadError::UnknownFormat { .. }));
    // The message says how to name the format.
    assert!(err.to_string().contains("--input-format"), "{err}");
}

#[test]
fn ids_are_strings_or_integers() {
    let data = b"{\"id\":7,\"text\":\"a\"}\n{\"id\":2.5,\"text\":\"b\"}\n{\"id\":true,\"text\":\"c\"}\n{\"id\":-3,\"text\":\"d\"}\n";
    let items = read_all("i.jsonl", data, &ReadOptions::default());
    assert_eq!(texts(&items), [("7".into(), "a".into()), ("-3".into(), "d".into())]);
    let got = rejects(&items);
    let not = |found| RejectReason::NotAString { field: "id".into(), found };
    assert_eq!(got, [("i.jsonl:2".into(), not("non-integer number")), ("i.jsonl:3".into(), not("boolean"))]);
}

#[test]
fn keep_raw_keeps_the_jsonl_line() {
    let keep = ReadOptions { keep_raw: true, ..ReadOptions::default() };
    let line = "{\"id\":\"a\",\"text\":\"one\",\"z\":[1,{\"b\":2}]}";
    let items = read_all("r.jsonl", format!("{line}\r\n").as_bytes(), &keep);
    assert_eq!(items[0].as_ref().unwrap().raw, Raw::JsonLine(line.into()));
}
