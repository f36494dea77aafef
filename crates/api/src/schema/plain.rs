//! Records answered without a future per field.
//!
//! async-graphql resolves every field of an object as a boxed future of its own, run in a
//! `FuturesUnordered` (a reference-counted task each) and merged into the object by name. A
//! page of 20 jobs with their work orders and assignees is some 420 fields, and that
//! machinery, with the allocations it makes, was most of an uncached query's CPU. Most of
//! those fields only read the row the record already holds (an id, a title, a status, a time).
//!
//! [`Plain<T>`] answers an object whose selection is fields only (no fragment, no directive,
//! no response key twice) by running the resolvers of its plain fields in place, each polled
//! once where it stands (they are ready at once: they read the record), and only the others
//! (those that load) as boxed futures, all of a record's together so the loaders still batch
//! a whole level. Every field is still answered by the record's own resolver, guards and
//! errors included, and keys come in the selection's order. Any other selection goes through
//! async-graphql's own resolution. `Plain<T>` has `T`'s name and type in the schema.
//!
//! A list's records share their selection, so its shape (whether it is plain, and the
//! object's keys in order) is worked out at the first record and kept for the request
//! ([`Shapes`]): the others start from a copy of that object, whose keys are hashed already,
//! instead of hashing each key again (SipHash: async-graphql's objects have the standard
//! library's hasher) and checking the selection again.
//!
//! In a request whose answers are never merged ([`Written`]: no fragment, no directive, no
//! response key twice in any selection), a plain record's answer is its JSON, written as its
//! fields are answered ([`crate::response_json::WrittenObject`]), not an object to be
//! written later: no object's keys are hashed, cloned or dropped, and the fields' values are
//! freed while they are still in the cache. async-graphql merges two answers of one key
//! into one object, which written JSON could not be; without fragments or repeated keys it
//! never has two to merge.
//!
//! A plain selection's leaf fields (those that only read the record, cannot fail and have no
//! guard) are read from the record directly ([`PlainFields::leaf`]), not through their
//! resolvers; in a written request a string is written from where the record holds it.

use std::borrow::Cow;
use std::collections::HashMap;
use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};

use async_graphql::indexmap::IndexMap;
use async_graphql::parser::types::{ExecutableDocument, Field, Selection, SelectionSet};
use async_graphql::registry::Registry;
use async_graphql::resolver_utils::{resolve_container, ContainerType, EnumType, ScalarType};
use async_graphql::{
    ContextSelectionSet, Name, OutputType, Positioned, ServerError, ServerResult, Value,
};

use crate::response_json::WrittenObject;

/// A record type some of whose fields read only what it holds.
pub trait PlainFields: ContainerType {
    /// The fields whose resolvers are ready at their first poll: they read the record, and
    /// wait on nothing (no loader, no store). They are still resolved by the record's own
    /// resolver, guards and errors included; this list only says which to run in place. A
    /// field listed wrongly costs time (it is run again as a future), never a wrong answer.
    const FIELDS: &'static [&'static str];

    /// A plain field's answer read straight from the record, for the fields whose resolver
    /// only reads the record, cannot fail and has no guard (an id, a name, a status); `None`
    /// leaves the field to its resolver. Each answer here must be the resolver's: the API's
    /// tests ask every field both ways (a selection in a fragment takes the resolvers).
    fn leaf(&self, _name: &str) -> Option<Leaf<'_>> {
        None
    }
}

/// A plain field's answer as [`PlainFields::leaf`] reads it.
pub enum Leaf<'r> {
    /// A string, an ID or an enum value's name.
    Text(&'r str),
    Null,
    /// Any other answer, as its resolver gives it.
    Value(Value),
}

impl Leaf<'_> {
    /// An instant as a `DateTime` field answers it.
    pub fn instant(seconds: i64) -> Leaf<'static> {
        Leaf::Value(ScalarType::to_value(&super::scalars::DateTime(seconds)))
    }

    /// The answer as its resolver gives it.
    fn into_value(self) -> Value {
        match self {
            Leaf::Text(text) => Value::String(text.to_owned()),
            Leaf::Null => Value::Null,
            Leaf::Value(value) => value,
        }
    }
}

/// The GraphQL name of an enum's value.
pub fn enum_name<E: EnumType>(value: E) -> Option<&'static str> {
    E::items()
        .iter()
        .find(|item| item.value == value)
        .map(|item| item.name)
}

/// `T` as the schema has it, answered as the module says.
pub struct Plain<T>(pub T);

impl<T: PlainFields> OutputType for Plain<T> {
    fn type_name() -> Cow<'static, str> {
        T::type_name()
    }

    fn qualified_type_name() -> String {
        T::qualified_type_name()
    }

    fn introspection_type_name(&self) -> Cow<'static, str> {
        self.0.introspection_type_name()
    }

    fn create_type_info(registry: &mut Registry) -> String {
        T::create_type_info(registry)
    }

    async fn resolve(
        &self,
        ctx: &ContextSelectionSet<'_>,
        _field: &Positioned<Field>,
    ) -> ServerResult<Value> {
        // Every selection of such a request is plain (`is_never_merged`).
        if ctx.data_opt::<Written>().is_some() {
            return resolve_written(ctx.clone(), &self.0).await;
        }
        match shape(ctx) {
            Some(object) => resolve_plain(ctx.clone(), &self.0, object).await,
            None => resolve_container(ctx, &self.0).await,
        }
    }
}

/// Marks a request whose plain records answer with their JSON (the module's last
/// paragraph); only for a document [`is_never_merged`] says so, and only where the response
/// is written by [`crate::response_json::to_json`], which knows such answers.
pub struct Written;

/// Whether no two answers of `document` are ever merged into one object, and every selection
/// in it is plain: no fragment, no directive, no response key twice in one selection.
/// async-graphql merges answers only under a key selected more than once, directly or
/// through fragments. (It removes what `@skip` and `@include` exclude before it executes, so
/// those could stay; a document with them is left to the objects, which is only slower.)
pub fn is_never_merged(document: &ExecutableDocument) -> bool {
    fn unmerged(selection: &SelectionSet) -> bool {
        is_plain(selection)
            && selection.items.iter().all(|item| match &item.node {
                Selection::Field(field) => unmerged(&field.node.selection_set.node),
                _ => false,
            })
    }
    // A fragment is used only by a spread, which `unmerged` refuses.
    document
        .operations
        .iter()
        .all(|(_, operation)| unmerged(&operation.node.selection_set.node))
}

/// The shapes of a request's plain selections: each selection set's object with its keys in
/// order and null values, or `None` for a selection that is not plain. Keyed by the selection
/// set's address: a context borrows its selection set from the request's document for the
/// whole execution, so no two selection sets of one request share an address, and the
/// request's data holds this map and is dropped with it (`crate::execute`).
#[derive(Default)]
pub struct Shapes(Mutex<HashMap<usize, Option<Object>, foldhash::fast::RandomState>>);

type Object = IndexMap<Name, Value>;

/// The selection's object with its keys in place when the selection is plain; `None` for
/// async-graphql's own resolution.
fn shape(ctx: &ContextSelectionSet<'_>) -> Option<Object> {
    let work_out = || is_plain(&ctx.item.node).then(|| keys_of(&ctx.item.node));
    let Some(shapes) = ctx.data_opt::<Shapes>() else {
        return work_out();
    };
    let at = std::ptr::from_ref(&ctx.item.node) as usize;
    // A poisoned lock held only a map of shapes: work the shape out again.
    let Ok(mut shapes) = shapes.0.lock() else {
        return work_out();
    };
    shapes.entry(at).or_insert_with(work_out).clone()
}

/// The object of a plain selection: its response keys in order, each null for now.
fn keys_of(selection: &SelectionSet) -> Object {
    let mut object = Object::with_capacity(selection.items.len());
    for item in &selection.items {
        if let Selection::Field(field) = &item.node {
            object.insert(field.node.response_key().node.clone(), Value::Null);
        }
    }
    object
}

/// Whether a selection (one level) is plain: fields only, each with its own response key and
/// no directive. (During execution `@skip` and `@include` are gone already: async-graphql
/// removes what they exclude before it executes.) The schema has no extension
/// (`build_schema`), which would expect to see every field resolved.
fn is_plain(selection: &SelectionSet) -> bool {
    let items = &selection.items;
    items.iter().enumerate().all(|(i, selection)| {
        let Selection::Field(field) = &selection.node else {
            return false;
        };
        let key = field.node.response_key().node.as_str();
        field.node.directives.is_empty()
            && items[..i].iter().all(|earlier| match &earlier.node {
                Selection::Field(earlier) => earlier.node.response_key().node.as_str() != key,
                _ => false,
            })
    })
}

/// A field that is not plain, answering with its place in the selection. Boxed: a record's
/// fields lead to other records (a job's work order, the work order's jobs), so its future
/// would otherwise contain itself.
type FieldFuture<'a> = Pin<Box<dyn Future<Output = (usize, ServerResult<Value>)> + Send + 'a>>;

/// Answers a plain selection into `object`, which has its keys in the selection's order.
async fn resolve_plain<'a, T: PlainFields>(
    ctx: ContextSelectionSet<'a>,
    record: &'a T,
    mut object: Object,
) -> ServerResult<Value> {
    let mut failed = Vec::new();
    resolve_fields(&ctx, record, &mut |i, answer| match answer {
        Answer::Resolved(Some(value)) => set(&mut object, i, value),
        Answer::Leaf(leaf) => set(&mut object, i, leaf.into_value()),
        Answer::Resolved(None) => failed.push(i),
    })
    .await;
    // As async-graphql does: a field that failed is left out and its error noted; the others
    // stand, in the order they were selected (GraphQL's "ordered as the selection set").
    failed.sort_unstable();
    for i in failed.into_iter().rev() {
        object.shift_remove_index(i);
    }
    if object.is_empty() {
        return Ok(Value::Null);
    }
    Ok(Value::Object(object))
}

/// Answers a plain selection with its JSON: the fields that did not fail, in the selection's
/// order, as [`resolve_plain`] leaves them. Each answer is written as soon as those before
/// it are, and then dropped.
async fn resolve_written<'a, T: PlainFields>(
    ctx: ContextSelectionSet<'a>,
    record: &'a T,
) -> ServerResult<Value> {
    let items = &ctx.item.node.items;
    let mut object = WrittenObject::new(items.len());
    resolve_fields(&ctx, record, &mut |i, answer| {
        // A plain selection is fields only, so the `i`th item is the `i`th answer's.
        if let Some(Selection::Field(field)) = items.get(i).map(|item| &item.node) {
            let key = field.node.response_key().node.as_str();
            match answer {
                Answer::Resolved(value) => object.field(i, key, value),
                Answer::Leaf(Leaf::Text(text)) => object.text(i, key, Some(text)),
                Answer::Leaf(Leaf::Null) => object.text(i, key, None),
                Answer::Leaf(Leaf::Value(value)) => object.field(i, key, Some(value)),
            }
        }
    })
    .await;
    object
        .finish()
        .map_err(|_| ServerError::new("the answer could not be written", None))
}

/// A field's answer as [`resolve_fields`] gives it.
enum Answer<'r> {
    /// From the field's resolver; `None` when it failed (its error noted).
    Resolved(Option<Value>),
    /// Straight from the record ([`PlainFields::leaf`]).
    Leaf(Leaf<'r>),
}

/// Resolves every field of a plain selection, giving each answer to `answer` with its place
/// in the selection: those ready at once (the record's leaves among them) in the selection's
/// order, then those that waited.
async fn resolve_fields<'a, T: PlainFields>(
    ctx: &ContextSelectionSet<'a>,
    record: &'a T,
    // `dyn`: one copy of the code for both callers, which keeps `now` inlined (the field's
    // future is polled where it was made, not moved into another frame first).
    answer: &mut (dyn FnMut(usize, Answer<'a>) + Send),
) {
    let items = &ctx.item.node.items;
    let mut pending: Vec<FieldFuture<'a>> = Vec::new();
    let settle = |answer: &mut (dyn FnMut(usize, Answer<'a>) + Send),
                  i: usize,
                  value: ServerResult<Value>| match value {
        Ok(value) => answer(i, Answer::Resolved(Some(value))),
        Err(error) => {
            ctx.add_error(error);
            answer(i, Answer::Resolved(None));
        }
    };
    // A plain selection is fields only, so the `i`th item is the object's `i`th key.
    for (i, selection) in items.iter().enumerate() {
        let Selection::Field(field) = &selection.node else {
            continue;
        };
        let name = field.node.name.node.as_str();
        if let Some(leaf) = record.leaf(name) {
            answer(i, Answer::Leaf(leaf));
            continue;
        }
        let ready = if name == "__typename" {
            Some(Ok(Value::String(
                record.introspection_type_name().into_owned(),
            )))
        } else if T::FIELDS.contains(&name) {
            now(record.resolve_field(&ctx.with_field(field)))
                .map(|value| value.map(Option::unwrap_or_default))
        } else {
            None
        };
        match ready {
            Some(value) => settle(answer, i, value),
            None => {
                let ctx = ctx.clone();
                pending.push(Box::pin(async move {
                    let ctx_field = ctx.with_field(field);
                    let value = record.resolve_field(&ctx_field).await;
                    (i, value.map(Option::unwrap_or_default))
                }));
            }
        }
    }
    // One field that waits (an assignment's employee) is awaited alone: `join_all` would
    // allocate twice for it (its futures and its outputs). Allocations were about a tenth of
    // an uncached query's instructions (docs/performance.md).
    match <[FieldFuture<'a>; 1]>::try_from(pending) {
        Ok([field]) => {
            let (i, value) = field.await;
            settle(answer, i, value);
        }
        Err(pending) => futures_util::future::join_all(pending)
            .await
            .into_iter()
            .for_each(|(i, value)| settle(answer, i, value)),
    }
}

fn set(object: &mut Object, i: usize, value: Value) {
    if let Some((_, slot)) = object.get_index_mut(i) {
        *slot = value;
    }
}

/// The output of a future that is ready at its first poll.
fn now<F: Future>(future: F) -> Option<F::Output> {
    let future = pin!(future);
    match future.poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => Some(output),
        Poll::Pending => None,
    }
}

/// [`PlainFields`] for a record type from its plain fields' GraphQL names.
macro_rules! plain_fields {
    ($record:ty { $($name:literal),+ $(,)? }) => {
        impl $crate::schema::plain::PlainFields for $record {
            const FIELDS: &'static [&'static str] = &[$($name),+];
        }
    };
    ($record:ty { $($name:literal),+ $(,)? } leaves $leaf:path) => {
        impl $crate::schema::plain::PlainFields for $record {
            const FIELDS: &'static [&'static str] = &[$($name),+];

            fn leaf(&self, name: &str) -> Option<$crate::schema::plain::Leaf<'_>> {
                $leaf(self, name)
            }
        }
    };
}

pub(crate) use plain_fields;

#[cfg(test)]
mod tests {
    use async_graphql::{EmptyMutation, EmptySubscription, Object, Result, Schema};

    use super::*;

    /// A record whose list of plain fields is wrong on purpose: `waits` is not ready at its
    /// first poll, and `fails` fails at once.
    struct Record;

    #[Object]
    impl Record {
        async fn ready(&self) -> i32 {
            1
        }

        async fn waits(&self) -> i32 {
            tokio::task::yield_now().await;
            2
        }

        async fn fails(&self) -> Result<Option<i32>> {
            Err("refused".into())
        }
    }

    plain_fields!(Record {
        "ready",
        "waits",
        "fails"
    });

    struct Query;

    #[Object]
    impl Query {
        async fn record(&self) -> Plain<Record> {
            Plain(Record)
        }
    }

    async fn run(query: &str) -> serde_json::Value {
        let schema = Schema::new(Query, EmptyMutation, EmptySubscription);
        serde_json::to_value(schema.execute(query).await).unwrap()
    }

    #[tokio::test]
    async fn a_field_listed_wrongly_answers_as_async_graphql_does() {
        let direct = run("{ record { waits fails ready __typename } }").await;
        // In a fragment: async-graphql's own path.
        let standard = run("{ record { ... on Record { waits fails ready __typename } } }").await;
        assert_eq!(direct["data"], standard["data"]);
        assert_eq!(
            direct["data"]["record"],
            serde_json::json!({ "waits": 2, "ready": 1, "__typename": "Record" })
        );
        for body in [&direct, &standard] {
            assert_eq!(body["errors"][0]["message"], "refused", "{body}");
            assert_eq!(
                body["errors"][0]["path"],
                serde_json::json!(["record", "fails"])
            );
        }
    }

    /// Records of a list, one of which fails a field: each answers its own values into the
    /// shape the first one worked out, as without shapes and as async-graphql's own path.
    #[tokio::test]
    async fn a_lists_records_share_its_shape_and_keep_their_own_values_and_errors() {
        struct Row(i32);

        #[Object]
        impl Row {
            async fn n(&self) -> i32 {
                self.0
            }

            async fn odd(&self) -> Result<bool> {
                match self.0 {
                    2 => Err("two".into()),
                    n => Ok(n % 2 == 1),
                }
            }

            async fn later(&self) -> Result<i32> {
                tokio::task::yield_now().await;
                match self.0 {
                    3 => Err("three".into()),
                    n => Ok(n * 10),
                }
            }
        }

        plain_fields!(Row { "n", "odd" });

        struct Rows;

        #[Object]
        impl Rows {
            async fn rows(&self) -> Vec<Plain<Row>> {
                (1..=4).map(|n| Plain(Row(n))).collect()
            }
        }

        let schema = Schema::new(Rows, EmptyMutation, EmptySubscription);
        let run = |query: &'static str, shapes: bool| {
            let schema = schema.clone();
            async move {
                let mut request = async_graphql::Request::new(query);
                if shapes {
                    request = request.data(Shapes::default());
                }
                serde_json::to_value(schema.execute(request).await).unwrap()
            }
        };
        let query = "{ rows { later n odd } }";
        let shaped = run(query, true).await;
        assert_eq!(
            shaped["data"]["rows"],
            serde_json::json!([
                { "later": 10, "n": 1, "odd": true },
                { "later": 20, "n": 2 },
                { "n": 3, "odd": true },
                { "later": 40, "n": 4, "odd": false },
            ])
        );
        let messages: Vec<&str> = shaped["errors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|error| error["message"].as_str().unwrap())
            .collect();
        assert_eq!(messages, ["two", "three"]);
        assert_eq!(shaped, run(query, false).await);
        let standard = run("{ rows { ... on Row { later n odd } } }", true).await;
        assert_eq!(shaped["data"], standard["data"]);
    }

    #[tokio::test]
    async fn keys_keep_the_selection_order_around_a_field_that_waits() {
        let schema = Schema::new(Query, EmptyMutation, EmptySubscription);
        let response = schema.execute("{ record { waits ready } }").await;
        let Value::Object(data) = response.data else {
            panic!("no data: {:?}", response.errors);
        };
        let Some(Value::Object(record)) = data.get("record") else {
            panic!("no record: {data:?}");
        };
        let keys: Vec<&str> = record.keys().map(|key| key.as_str()).collect();
        assert_eq!(keys, ["waits", "ready"]);
    }

    /// A record whose fields are ready, wait, fail, and lead to records of its own kind.
    struct Node(i32, String);

    #[Object]
    impl Node {
        async fn n(&self) -> i32 {
            self.0
        }

        async fn name(&self) -> Option<&str> {
            (self.0 != 4).then_some(&self.1)
        }

        async fn odd(&self) -> Result<bool> {
            match self.0 {
                2 => Err("two".into()),
                n => Ok(n % 2 == 1),
            }
        }

        async fn later(&self) -> Result<Option<i32>> {
            tokio::task::yield_now().await;
            match self.0 {
                3 => Err("three".into()),
                4 => Ok(None),
                n => Ok(Some(n * 10)),
            }
        }

        async fn next(&self) -> Option<Plain<Node>> {
            tokio::task::yield_now().await;
            (self.0 < 3).then(|| Plain(Node::new(self.0 + 1)))
        }

        async fn kids(&self) -> Vec<Plain<Node>> {
            (0..self.0.min(2)).map(|n| Plain(Node::new(n))).collect()
        }
    }

    impl Node {
        fn new(n: i32) -> Node {
            Node(n, format!("node \"{n}\""))
        }

        /// `n` and `name` from the record; `odd` (which can fail) from its resolver.
        fn leaf(&self, name: &str) -> Option<Leaf<'_>> {
            match name {
                "n" => Some(Leaf::Value(Value::from(self.0))),
                "name" if self.0 == 4 => Some(Leaf::Null),
                "name" => Some(Leaf::Text(&self.1)),
                _ => None,
            }
        }
    }

    plain_fields!(Node { "n", "name", "odd", "kids" } leaves Node::leaf);

    struct Nodes;

    #[Object]
    impl Nodes {
        async fn nodes(&self) -> Vec<Plain<Node>> {
            (1..=4).map(|n| Plain(Node::new(n))).collect()
        }
    }

    /// A request written as it is answered ([`Written`]) gives the body that the records'
    /// objects give: values, nulls, nesting, lists, keys in order, fields that wait or fail
    /// (left out, their errors in the order they came), a record whose every field failed.
    #[tokio::test]
    async fn written_answers_are_the_bytes_the_objects_give() {
        let schema = Schema::new(Nodes, EmptyMutation, EmptySubscription);
        for query in [
            "{ nodes { later n name odd __typename } }",
            "{ nodes { n next { n later next { name odd } } kids { n kids { odd } } } }",
            "{ nodes { odd } }",
            "{ nodes { alias: n n: name } }",
        ] {
            let document = async_graphql::parser::parse_query(query).unwrap();
            assert!(is_never_merged(&document), "{query}");
            let objects = schema
                .execute(async_graphql::Request::new(query).data(Shapes::default()))
                .await;
            let written = schema
                .execute(async_graphql::Request::new(query).data(Written))
                .await;
            let Value::Object(root) = &written.data else {
                panic!("no data: {:?}", written.errors);
            };
            let Some(Value::List(nodes)) = root.get("nodes") else {
                panic!("no nodes: {root:?}");
            };
            assert!(
                nodes.iter().any(|node| matches!(node, Value::Binary(_))),
                "{query}: not written"
            );
            let body =
                |response| String::from_utf8(crate::response_json::to_json(response).unwrap());
            assert_eq!(
                body(&written).unwrap(),
                serde_json::to_string(&objects).unwrap(),
                "{query}"
            );
            assert!(
                !objects.errors.is_empty() || !query.contains("odd"),
                "{query}"
            );
            // In a fragment every field is answered by its resolver, leaves too.
            let fragment = query.replacen("{ nodes {", "{ nodes { ... on Node {", 1) + " }";
            let resolvers = schema.execute(fragment.as_str()).await;
            assert_eq!(
                serde_json::from_str::<serde_json::Value>(&body(&written).unwrap()).unwrap()
                    ["data"],
                serde_json::to_value(&resolvers).unwrap()["data"],
                "{fragment}"
            );
        }
    }

    /// Answers are merged under a key selected twice (directly or through a fragment), which
    /// written JSON could not be: such documents are not written.
    #[test]
    fn a_document_whose_answers_merge_is_not_written() {
        for (query, never_merged) in [
            ("{ nodes { n next { n } } }", true),
            (
                "query A { nodes { n } } query B { nodes { n n: name } }",
                false,
            ),
            ("query A { nodes { n } } query B { nodes { name } }", true),
            ("{ nodes { n } nodes { name } }", false),
            ("{ nodes { next { n } next { name } } }", false),
            ("{ nodes { n: name n } }", false),
            ("{ nodes { ... on Node { n } } }", false),
            ("{ nodes { ...F } } fragment F on Node { n }", false),
            ("{ nodes { n @include(if: true) } }", false),
            ("{ nodes { next @skip(if: false) { n } } }", false),
        ] {
            let document = async_graphql::parser::parse_query(query).unwrap();
            assert_eq!(is_never_merged(&document), never_merged, "{query}");
        }
    }
}
