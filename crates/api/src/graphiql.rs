//! `GET /api`: GraphiQL, for people exploring the API with a token they paste in. The
//! libraries come from a CDN pinned by version and Subresource Integrity, the start-up script
//! from this server, so the Content-Security-Policy needs no inline script. Headers (and so
//! the token) are not persisted in the browser.

use axum::http::header;
use axum::response::{Html, IntoResponse, Response};

const CDN: &str = "https://cdn.jsdelivr.net";

/// `script-src` has no 'unsafe-inline'; GraphiQL's editor sets inline styles, so `style-src`
/// does. Nothing may frame the page, and it talks only to this origin.
const CSP: &str = "default-src 'none'; script-src 'self' https://cdn.jsdelivr.net; \
    style-src 'self' 'unsafe-inline' https://cdn.jsdelivr.net; font-src https://cdn.jsdelivr.net data:; \
    img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; \
    frame-ancestors 'none'";

/// (path under the CDN, SHA-384 of the file as published on npm)
const STYLE: (&str, &str) = (
    "/npm/graphiql@3.8.3/graphiql.min.css",
    "sha384-Mq3vbRBY71jfjQAt/DcjxUIYY33ksal4cgdRt9U/hNPvHBCaT2JfJ/PTRiPKf0aM",
);
const SCRIPTS: [(&str, &str); 3] = [
    (
        "/npm/react@18.3.1/umd/react.production.min.js",
        "sha384-DGyLxAyjq0f9SPpVevD6IgztCFlnMF6oW/XQGmfe+IsZ8TqEiDrcHkMLKI6fiB/Z",
    ),
    (
        "/npm/react-dom@18.3.1/umd/react-dom.production.min.js",
        "sha384-gTGxhz21lVGYNMcdJOyq01Edg0jhn/c22nsx0kyqP0TxaV5WVdsSH1fSDUf5YJj1",
    ),
    (
        "/npm/graphiql@3.8.3/graphiql.min.js",
        "sha384-HbRVEFG0JGJZeAHCJ9Xm2+tpknBQ7QZmNlO/DgZtkZ0aJSypT96YYGRNod99l9Ie",
    ),
];

const START: &str = r##"// Starts GraphiQL against this page's own URL.
(function () {
  var fetcher = GraphiQL.createFetcher({ url: window.location.pathname });
  var root = ReactDOM.createRoot(document.getElementById("graphiql"));
  root.render(React.createElement(GraphiQL, {
    fetcher: fetcher,
    defaultEditorToolsVisibility: "headers",
    shouldPersistHeaders: false,
    defaultHeaders: '{\n  "Authorization": "Bearer paste-an-access-token-here"\n}',
    defaultQuery: "# Every request needs an access token: put it in the Headers tab below.\n{\n  viewer {\n    subject\n    organization { name }\n    scopes\n  }\n}\n"
  }));
})();
"##;

pub async fn page() -> Response {
    let scripts: String = SCRIPTS
        .iter()
        .map(|(path, hash)| {
            format!(
                "<script src=\"{CDN}{path}\" integrity=\"{hash}\" crossorigin=\"anonymous\"></script>\n"
            )
        })
        .collect();
    let html = format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>fieldauth API · GraphiQL</title>\n\
         <link rel=\"stylesheet\" href=\"{CDN}{}\" integrity=\"{}\" crossorigin=\"anonymous\">\n\
         <style>html, body, #graphiql {{ height: 100%; margin: 0; }}</style>\n\
         </head>\n<body>\n<div id=\"graphiql\">GraphiQL needs JavaScript and access to {CDN}. \
         Without them, POST GraphQL requests to this URL with an access token.</div>\n\
         {scripts}<script src=\"/api/graphiql.js\"></script>\n</body>\n</html>\n",
        STYLE.0, STYLE.1,
    );
    with_policy(Html(html).into_response())
}

pub async fn start_script() -> Response {
    with_policy(
        (
            [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
            START,
        )
            .into_response(),
    )
}

fn with_policy(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        header::HeaderValue::from_static(CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        header::HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        header::HeaderValue::from_static("no-referrer"),
    );
    response
}
