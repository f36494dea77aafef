//! The parser against async-graphql's own: the same tree, every position included, for
//! every document it accepts; `None` where it leaves the parse to async-graphql.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use async_graphql::parser::parse_query;
use async_graphql::parser::types::{DocumentOperations, ExecutableDocument};

use super::parse;

/// Both trees written out with their positions (async-graphql's `Positioned` compares
/// nodes only), operations and fragments by name.
fn written(document: &ExecutableDocument) -> String {
    let mut parts = match &document.operations {
        DocumentOperations::Single(operation) => vec![format!("single {operation:?}")],
        DocumentOperations::Multiple(operations) => operations
            .iter()
            .map(|(name, operation)| format!("operation {name} {operation:?}"))
            .collect(),
    };
    parts.sort();
    let mut fragments: Vec<_> = document
        .fragments
        .iter()
        .map(|(name, fragment)| format!("fragment {name} {fragment:?}"))
        .collect();
    fragments.sort();
    parts.extend(fragments);
    parts.join("\n")
}

/// Whether ours accepted `source`; when it did, async-graphql accepts it too, with the
/// same tree.
fn agrees(source: &str) -> bool {
    let Some(ours) = parse(source) else {
        return false;
    };
    let reference = parse_query(source)
        .unwrap_or_else(|e| panic!("ours accepted what async-graphql refuses ({e}): {source:?}"));
    assert_eq!(written(&ours), written(&reference), "{source:?}");
    true
}

const ACCEPTED: &[&str] = &[
    "{ viewer { id } }",
    "query BenchJobs { jobs(first: 20) { totalCount nodes { id title status scheduledStart \
     scheduledEnd workOrder { id number description status } assignments { assignedAt \
     employee { id name role } } } } }",
    "query { a }",
    "query Q { a }\nquery R { b }",
    "mutation M($input: CreateJobInput!) { createJob(input: $input) { job { id } } }",
    "subscription S { ticks }",
    "query ($a: Int = 1, $b: [String!]! = [\"x\", \"y\"], $c: In = {a: 1, b: [null, true]}) { f(a: $a) }",
    "query Q($v: Boolean @deprecated(reason: \"no\")) @op(x: 1) { f @include(if: $v) @skip(if: false) }",
    "{ alias: field(arg: ENUM_VALUE, other: -0.5e-3) another: field(x: 12345678901234567890) }",
    "{ f(s: \"esc \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 \\uABCD end\") }",
    "{ f(s: \"ünïcödé ✓ 😀\", t: \"\") }",
    "# a comment\n{ # another\n  a # and one more\n}\n# trailing",
    "\u{feff}{ a,,, b\t c\r\n d\r e }",
    "{ ... on Job { id } ... @include(if: true) { id } ... { id } ...Spread ...onion @d }",
    "{ ...\n on\n Job { id } ... on,Job { id } }",
    "query Q { ...F } fragment F on Job @d { id ...G } fragment G on Job { title }",
    "fragment F on Job { id } query Q { ...F }",
    "fragment on on on { id } { a }",
    "{ f(list: [1, 2.0, 3e5, -4, 0, -0.0, \"s\", A, {k: [[]]}, {}], obj: {a: 1, a: 2, b: $v}) }",
    "query($x:Int){f(x:$x)}",
    "query Q() { a }",
    "query Q($ a: Int) { f(x: $ a) @ skip(if: true) }",
    "{ f(x: [[[[[[1]]]]]]) g(t: truE, n: NULL) }",
    "{ a { b { c { d { e { f { g { h { i { j } } } } } } } } } }",
    "query Q($a: [[Int!]]!) { f }",
    "{ f(a: 1) { g(b: \"x\") } }\n",
    "\n\n   { a }",
];

#[test]
fn every_construct_gives_async_graphqls_tree_with_its_positions() {
    for source in ACCEPTED {
        assert!(agrees(source), "left to async-graphql: {source:?}");
    }
}

const DECLINED: &[&str] = &[
    "",
    "   # only a comment",
    "{ }",
    "{ a",
    "{ a } { b }",
    "query Q { a } query Q { b }",
    "{ a } query Q { b }",
    "query Q { a } { b }",
    "query Q { ...F } fragment F on A { a } fragment F on A { b }",
    "queryQ { a }",
    "fragmentF on A { a } { b }",
    "{ f(a: \"\"\"block\"\"\") }",
    "{ f(a: \"unterminated) }",
    "{ f(a: \"line\nbreak\") }",
    "{ f(a: \"\\ud800\") }",
    "{ f(a: \"\\x\") }",
    "{ f(a: nullable) }",
    "{ f(a: trueish) }",
    "{ f(a: 0123) }",
    "{ f(a: 1.) }",
    "{ f(a: 1e) }",
    "{ f(a: 1.5.2) }",
    "{ f(a: 12abc) }",
    "{ f(a: -) }",
    "{ f() }",
    "{ f(a: $v) } query($v: Int = $w) { a }",
    "query($v: [Int) { a }",
    "query($v: Int !) { a }",
    "{ ... on #c\n Job { id } }",
    "{ ...on{ id } }",
    "{ ... on Job }",
    "{ ... @d }",
    "{ a:: b }",
    "{ a \u{0b} b }",
    "{ a } }",
];

#[test]
fn what_it_does_not_read_is_left_to_async_graphql() {
    for source in DECLINED {
        assert!(parse(source).is_none(), "ours accepted {source:?}");
    }
}

#[test]
fn selections_nested_past_async_graphqls_limit_are_left_to_it() {
    let nested = |levels: usize| {
        let mut source = String::from("{ ");
        for _ in 0..levels {
            source.push_str("a { ");
        }
        source.push('b');
        for _ in 0..=levels {
            source.push_str(" }");
        }
        source
    };
    for levels in [63, 64] {
        assert!(agrees(&nested(levels)), "{levels} levels");
    }
    assert!(parse_query(nested(65)).is_err());
    assert!(parse(&nested(65)).is_none());
}

/// Random documents of everything `ACCEPTED` has, with random spacing and comments.
struct Generator {
    rng: fastrand::Rng,
}

impl Generator {
    fn pick<'a>(&mut self, options: &[&'a str]) -> &'a str {
        options[self.rng.usize(..options.len())]
    }

    fn gap(&mut self, out: &mut String) {
        // At least one: two names, or a number and a name, would otherwise run together.
        for _ in 0..self.rng.usize(1..3) {
            let piece = self.pick(&[" ", "\n", ",", "\t", "\r\n", "\r", "\u{feff}", "  "]);
            out.push_str(piece);
        }
        if self.rng.u8(..) < 12 {
            out.push_str(self.pick(&["# note\n", "#é😀\r", "#\n"]));
        }
    }

    fn name(&mut self) -> String {
        let name = self.pick(&[
            "a", "id", "on", "query", "fragment", "true_", "Job", "_x9", "nulls", "f",
        ]);
        name.to_owned()
    }

    fn value(&mut self, out: &mut String, depth: usize) {
        let choice = if depth > 2 {
            self.rng.usize(..8)
        } else {
            self.rng.usize(..10)
        };
        match choice {
            0 => out.push_str("$v"),
            1 => out.push_str(self.pick(&[
                "0",
                "-7",
                "42",
                "3.25",
                "-0.5e-3",
                "1E9",
                "18446744073709551616",
            ])),
            2 => out.push_str(self.pick(&["\"\"", "\"s t\"", "\"\\u00e9\\n\\\"\"", "\"é😀\""])),
            3 => out.push_str(self.pick(&["true", "false", "null"])),
            4..=7 => out.push_str(self.pick(&["ENUM", "Open", "on", "nul"])),
            8 => {
                out.push('[');
                for _ in 0..self.rng.usize(0..3) {
                    self.gap(out);
                    self.value(out, depth + 1);
                }
                self.gap(out);
                out.push(']');
            }
            _ => {
                out.push('{');
                for _ in 0..self.rng.usize(0..3) {
                    self.gap(out);
                    out.push_str(&self.name());
                    self.gap(out);
                    out.push(':');
                    self.gap(out);
                    self.value(out, depth + 1);
                }
                self.gap(out);
                out.push('}');
            }
        }
    }

    fn arguments(&mut self, out: &mut String) {
        if self.rng.bool() {
            return;
        }
        out.push('(');
        for _ in 0..self.rng.usize(1..3) {
            self.gap(out);
            out.push_str(&self.name());
            self.gap(out);
            out.push(':');
            self.gap(out);
            self.value(out, 0);
        }
        self.gap(out);
        out.push(')');
    }

    fn directives(&mut self, out: &mut String) {
        while self.rng.u8(..) < 40 {
            self.gap(out);
            out.push('@');
            out.push_str(&self.name());
            self.arguments(out);
        }
    }

    fn selection_set(&mut self, out: &mut String, depth: usize) {
        out.push('{');
        for _ in 0..self.rng.usize(1..4) {
            self.gap(out);
            match self.rng.usize(..8) {
                0 if depth < 4 => {
                    out.push_str("...");
                    self.gap(out);
                    if self.rng.bool() {
                        out.push_str("on ");
                        out.push_str(&self.name());
                    }
                    self.directives(out);
                    self.gap(out);
                    self.selection_set(out, depth + 1);
                }
                1 => {
                    out.push_str("...");
                    self.gap(out);
                    out.push_str(self.pick(&["F", "G", "onion"]));
                    self.directives(out);
                }
                _ => {
                    if self.rng.bool() {
                        out.push_str(&self.name());
                        self.gap(out);
                        out.push(':');
                        self.gap(out);
                    }
                    out.push_str(&self.name());
                    self.gap(out);
                    self.arguments(out);
                    self.directives(out);
                    if depth < 4 && self.rng.bool() {
                        self.gap(out);
                        self.selection_set(out, depth + 1);
                    }
                }
            }
        }
        self.gap(out);
        out.push('}');
    }

    fn variables(&mut self, out: &mut String) {
        if self.rng.bool() {
            return;
        }
        out.push('(');
        for _ in 0..self.rng.usize(0..3) {
            self.gap(out);
            out.push('$');
            out.push_str(&self.name());
            self.gap(out);
            out.push(':');
            self.gap(out);
            out.push_str(self.pick(&["Int", "[Int]", "[String!]!", "Job!", "[[ID!]]"]));
            self.directives(out);
            if self.rng.bool() {
                self.gap(out);
                out.push('=');
                self.gap(out);
                let mut value = String::new();
                self.value(&mut value, 0);
                out.push_str(&value.replace("$v", "1"));
            }
        }
        self.gap(out);
        out.push(')');
    }

    fn document(&mut self) -> String {
        let mut out = String::new();
        self.gap(&mut out);
        if self.rng.u8(..) < 60 {
            self.selection_set(&mut out, 0);
        } else {
            let names = ["A", "B", "C"];
            for name in &names[..self.rng.usize(1..4)] {
                out.push_str(self.pick(&["query", "mutation", "subscription"]));
                out.push(' ');
                out.push_str(name);
                self.gap(&mut out);
                self.variables(&mut out);
                self.directives(&mut out);
                self.gap(&mut out);
                self.selection_set(&mut out, 0);
                self.gap(&mut out);
            }
        }
        for name in &["F", "G"][..self.rng.usize(0..3)] {
            self.gap(&mut out);
            out.push_str("fragment ");
            out.push_str(name);
            out.push_str(" on ");
            out.push_str(&self.name());
            self.directives(&mut out);
            self.gap(&mut out);
            self.selection_set(&mut out, 0);
        }
        self.gap(&mut out);
        out
    }
}

#[test]
fn generated_documents_give_async_graphqls_tree() {
    let mut generator = Generator {
        rng: fastrand::Rng::with_seed(25),
    };
    for _ in 0..3_000 {
        let source = generator.document();
        assert!(agrees(&source), "left to async-graphql: {source:?}");
    }
}

/// Damaged documents: whatever ours accepts, async-graphql accepts as the same tree. Most
/// are refused by both; those ours leaves to async-graphql may parse there.
#[test]
fn damaged_documents_are_never_read_otherwise() {
    let mut generator = Generator {
        rng: fastrand::Rng::with_seed(9),
    };
    let pieces = [
        "{",
        "}",
        "(",
        ")",
        "[",
        "]",
        ":",
        "$",
        "@",
        "...",
        "on ",
        "\"",
        "\\",
        "#",
        "\n",
        "\r",
        " ",
        ",",
        "!",
        "=",
        "-",
        ".",
        "0",
        "1",
        "e",
        "a",
        "true",
        "null",
        "\"\"\"",
        "é",
        "\u{feff}",
        "query ",
        "fragment ",
    ];
    let mut accepted = 0;
    for _ in 0..20_000 {
        let mut source = generator.document();
        for _ in 0..generator.rng.usize(1..4) {
            let mut at = generator.rng.usize(..=source.len());
            while !source.is_char_boundary(at) {
                at -= 1;
            }
            let mut end = (at + generator.rng.usize(0..3)).min(source.len());
            while !source.is_char_boundary(end) {
                end += 1;
            }
            let piece = generator.pick(&pieces);
            source.replace_range(at..end, piece);
        }
        if agrees(&source) {
            accepted += 1;
        }
    }
    // Damage that leaves a document valid (an extra space, a changed name) is common: the
    // test must have compared trees, not only seen refusals.
    assert!(
        accepted > 2_000,
        "only {accepted} damaged documents were read"
    );
}
