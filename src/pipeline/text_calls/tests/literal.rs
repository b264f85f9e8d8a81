//! Python and JSON literals, and calls written with them, read exactly: what is read, and what is refused.

use super::super::literal::*;
use serde_json::Value;
use serde_json::json;

fn call(text: &str) -> Result<(String, Value), Unread> {
    let mut r = Reader::new(text);
    let c = r.call()?;
    assert!(r.at_end(), "left {:?}", r.rest());
    Ok((c.name, Value::Object(c.arguments)))
}

#[test]
fn python_literals_read_as_json_would_write_them() {
    let (name, args) = call(
        r#"geo.distance(a=(48.85, 2.29), b=[1, -2.5e3], s='it\'s', t="x\ny", ok=True, no=None, d={'k': [1]}, big=1_000)"#,
    )
    .unwrap();
    assert_eq!(name, "geo.distance");
    assert_eq!(
        args,
        json!({"a": [48.85, 2.29], "b": [1, -2500.0], "s": "it's", "t": "x\ny", "ok": true, "no": null,
               "d": {"k": [1]}, "big": 1000})
    );
    assert_eq!(call("f(p=r'a\\b', q='''two\nlines''')").unwrap().1, json!({"p": "a\\b", "q": "two\nlines"}));
    assert_eq!(call("f()").unwrap().1, json!({}));
    assert_eq!(call("f({'a': 1, \"b\": [True]})").unwrap().1, json!({"a": 1, "b": [true]}));
}

#[test]
fn what_is_not_a_literal_is_refused() {
    for text in [
        "f({'a': 1}, 2)",
        "f({'a': 1}, b=2)",
        "f(1, 2)",
        "f(x=y)",
        "f(x=g(a=1))",
        "f(x=1 + 2)",
        "f(x=1, x=2)",
        "f(x=f'{a}')",
        "f(x='open",
    ] {
        assert!(call(text).is_err(), "{text}");
    }
}
