//! `fieldauth demo`: an idempotent seed of the demo tenant, the server with the demo app
//! beside it, and the walkthrough printed on start. Passwords and the confidential client's
//! secret are stored only as hashes, so each start sets fresh ones and prints them.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use jose::{Clock, UnixTime};
use oauth::{paths, OsRandom, RandomSource, Scope};
use secrecy::{ExposeSecret, SecretString};
use store::{NewClient, NewUser, Store, StoreError, TenantId, TenantStore};
use tokio::net::TcpListener;
use url::Url;

use crate::config::ServeConfig;
use crate::demo_app::{self, DemoApp, DemoAppConfig, DemoAppState};
use crate::demo_records;
use crate::serve::{self, Listeners, Server};

pub const TENANT: &str = "demo";
pub const SPA_CLIENT: &str = "demo-spa";
pub const WEB_CLIENT: &str = "demo-web";
pub const WEB_REDIRECT_URI: &str = "http://127.0.0.1:8500/callback";
pub const ORGANIZATIONS: [&str; 2] = ["Northwind Plumbing", "Summit Electric"];
/// What the demo app and the walkthrough ask for: every scope.
pub const SCOPE: &str =
    "openid profile email offline_access jobs workOrders customers invoices employees";
/// The walkthrough's API query: the next jobs with their work order, customer and crew.
pub const API_EXAMPLE: &str = "{ viewer { organization { name } } jobs(first: 5) { totalCount nodes { title status scheduledStart workOrder { number customer { name } } assignments { employee { name } } } } }";

/// The secrets set by this start, for the walkthrough.
#[derive(Debug)]
pub struct DemoSecrets {
    pub alice_password: SecretString,
    pub bob_password: SecretString,
    pub web_client_secret: SecretString,
}

/// The listeners of a demo: the server's two and the demo app's.
#[derive(Debug)]
pub struct DemoListeners {
    pub server: Listeners,
    pub app: TcpListener,
}

/// The demo app serves plain http, which a redirect URI may use only on loopback (RFC 8252
/// §7.3); checked before anything touches the database.
pub fn check_app_listen(addr: SocketAddr) -> anyhow::Result<()> {
    anyhow::ensure!(
        addr.ip().is_loopback(),
        "--demo-app-listen {addr}: the demo app serves plain http, so it listens on a loopback \
         address only (127.0.0.1 or [::1])"
    );
    Ok(())
}

/// Binds every port first: a busy one must stop the demo before it replaces the demo
/// credentials.
pub async fn bind_listeners(
    config: &ServeConfig,
    app_listen: SocketAddr,
) -> anyhow::Result<DemoListeners> {
    check_app_listen(app_listen)?;
    let server = serve::bind_listeners(config).await?;
    let app = TcpListener::bind(app_listen)
        .await
        .with_context(|| format!("cannot listen on {app_listen} (--demo-app-listen)"))?;
    Ok(DemoListeners { server, app })
}

/// A running demo: the server, the demo app, and the walkthrough to print.
#[derive(Debug)]
pub struct RunningDemo {
    pub server: Server,
    pub app: DemoApp,
    pub walkthrough: String,
}

impl RunningDemo {
    pub async fn shutdown(self) {
        self.app.shutdown().await;
        self.server.shutdown().await;
    }
}

/// `fieldauth demo`: seeds the tenant with demo-spa's redirect URI on the demo app's bound
/// address, starts the server and the app, and writes the walkthrough. The binary and the
/// tests both start the demo here.
pub async fn start(
    config: &ServeConfig,
    listeners: DemoListeners,
    store: Store,
    clock: Arc<dyn Clock>,
    random: &dyn RandomSource,
) -> anyhow::Result<RunningDemo> {
    let app_origin = demo_app::origin(listeners.app.local_addr()?);
    let redirect_uri = format!("{app_origin}{}", demo_app::CALLBACK);
    let secrets = seed(&store, random, clock.now(), &redirect_uri)
        .await
        .context("cannot seed the demo tenant")?;
    let app_state = DemoAppState::new(
        DemoAppConfig {
            issuer: config.issuer.clone(),
            api_url: config.api_url.clone(),
            tenant: TENANT.to_owned(),
            client_id: SPA_CLIENT.to_owned(),
            redirect_uri: redirect_uri.clone(),
            scope: SCOPE.to_owned(),
        },
        Arc::clone(&clock),
        Arc::new(OsRandom::new()),
    )
    .context("cannot prepare the demo app")?;
    let server = serve::start_on(config, listeners.server, store, clock).await?;
    let app = DemoApp::start(listeners.app, app_state).context("cannot start the demo app")?;
    let walkthrough = walkthrough(config, &secrets, &app_origin, random)?;
    Ok(RunningDemo {
        server,
        app,
        walkthrough,
    })
}

/// Creates whatever is missing of the demo tenant; `spa_redirect_uri` is the demo app's
/// callback, set again at every start since the app may listen elsewhere this time.
pub async fn seed(
    store: &Store,
    random: &dyn RandomSource,
    now: UnixTime,
    spa_redirect_uri: &str,
) -> anyhow::Result<DemoSecrets> {
    let tenant_id = TenantId::parse(TENANT)?;
    ignore_conflict(
        store
            .create_tenant(&tenant_id, "Demo field-service company", now)
            .await,
    )?;
    let tenant = store.tenant(&tenant_id);

    let all_scopes: Vec<String> = Scope::ALL.iter().map(|s| s.as_str().to_owned()).collect();
    let spa_uris = [spa_redirect_uri.to_owned()];
    let spa = NewClient {
        client_id: SPA_CLIENT,
        name: "Dispatch board (demo SPA)",
        secret_hash: None,
        redirect_uris: &spa_uris,
        scopes: &all_scopes,
    };
    if !ignore_conflict(tenant.create_client(&spa, now).await)? {
        tenant
            .set_client_redirect_uris(SPA_CLIENT, &spa_uris)
            .await?;
    }
    let (web_client_secret, web_hash) = oauth::secret::generate_client_secret(random)?;
    let web_uris = [WEB_REDIRECT_URI.to_owned()];
    let web = NewClient {
        client_id: WEB_CLIENT,
        name: "Back office (demo web app)",
        secret_hash: Some(&web_hash),
        redirect_uris: &web_uris,
        scopes: &all_scopes,
    };
    if !ignore_conflict(tenant.create_client(&web, now).await)? {
        tenant.set_client_secret_hash(WEB_CLIENT, &web_hash).await?;
    }

    let mut organizations = Vec::new();
    for name in ORGANIZATIONS {
        organizations.push(organization(&tenant, name, random, now).await?);
    }
    let alice_password = new_password(random)?;
    let alice = user(
        &tenant,
        ("alice", "Alice Anders", "alice@demo.fieldauth.example"),
        &alice_password,
        random,
        now,
    )
    .await?;
    let bob_password = new_password(random)?;
    let bob = user(
        &tenant,
        ("bob", "Bob Brennan", "bob@demo.fieldauth.example"),
        &bob_password,
        random,
        now,
    )
    .await?;
    for guid in &organizations {
        ignore_conflict(tenant.add_membership(&alice, guid, now).await)?;
    }
    ignore_conflict(tenant.add_membership(&bob, &organizations[0], now).await)?;
    let trades = [&demo_records::PLUMBING, &demo_records::ELECTRICAL];
    for (guid, trade) in organizations.iter().zip(trades) {
        demo_records::seed_organization(&tenant.organization(guid), trade, now).await?;
    }
    Ok(DemoSecrets {
        alice_password,
        bob_password,
        web_client_secret,
    })
}

/// The walkthrough: the demo app to open first, where things are, the credentials, and the
/// same flow by hand: an authorization URL with a fresh PKCE pair and the curl commands.
pub fn walkthrough(
    config: &ServeConfig,
    secrets: &DemoSecrets,
    app_origin: &str,
    random: &dyn RandomSource,
) -> anyhow::Result<String> {
    let issuer = &config.issuer;
    let redirect_uri = format!("{app_origin}{}", demo_app::CALLBACK);
    let code_verifier = random.token()?;
    let state = random.token()?;
    let nonce = random.token()?;
    let mut authorize = Url::parse(&issuer.endpoint(paths::AUTHORIZE))?;
    authorize
        .query_pairs_mut()
        .append_pair("tenant", TENANT)
        .append_pair("response_type", "code")
        .append_pair("client_id", SPA_CLIENT)
        .append_pair("redirect_uri", &redirect_uri)
        .append_pair("scope", SCOPE)
        .append_pair(
            "code_challenge",
            &oauth::pkce::s256_challenge(&code_verifier),
        )
        .append_pair("code_challenge_method", "S256")
        .append_pair("state", &state)
        .append_pair("nonce", &nonce);
    let discovery = issuer.endpoint(paths::OPENID_CONFIGURATION);
    let lines = [
        String::new(),
        "fieldauth demo is running.".to_owned(),
        String::new(),
        format!(
            "Open {app_origin}/ in a browser and sign in as alice (password {}).",
            secrets.alice_password.expose_secret()
        ),
        "  The demo app signs in with the authorization code flow and PKCE, then shows the tokens' claims,".to_owned(),
        "  the userinfo answer and the jobs of the organization chosen on the consent page.".to_owned(),
        String::new(),
        format!("  Issuer (auth server)  {issuer}"),
        format!("  API                   {}", config.api_url),
        format!("  Demo app              {app_origin}/   (the back end of the public client {SPA_CLIENT})"),
        format!("  Discovery             {discovery}"),
        format!("  JWKS                  {}", issuer.endpoint(paths::JWKS)),
        String::new(),
        format!("Demo tenant \"{TENANT}\":"),
        format!(
            "  user alice   password {}   (member of {} and {})",
            secrets.alice_password.expose_secret(),
            ORGANIZATIONS[0],
            ORGANIZATIONS[1]
        ),
        format!(
            "  user bob     password {}   (member of {})",
            secrets.bob_password.expose_secret(),
            ORGANIZATIONS[0]
        ),
        format!("  public client        {SPA_CLIENT}   redirect_uri {redirect_uri}"),
        format!("  confidential client  {WEB_CLIENT}   redirect_uri {WEB_REDIRECT_URI}"),
        format!(
            "                       client_secret {}",
            secrets.web_client_secret.expose_secret()
        ),
        "  (the passwords and the client secret are new at every start; only hashes are stored)"
            .to_owned(),
        String::new(),
        "The same flow by hand, with curl:".to_owned(),
        format!("  curl -s {discovery}"),
        "  Open this authorization URL in a browser and sign in as alice:".to_owned(),
        format!("    {authorize}"),
        format!("  state {state}"),
        format!("  PKCE code_verifier for the token exchange: {code_verifier}"),
        String::new(),
        "After Sign in and Allow, the browser lands on the demo app's callback, which did not start this sign-in and says so;".to_owned(),
        format!("copy the code from its address bar ({redirect_uri}?code=demo.…&state=…&iss=…), then:"),
        "  CODE='paste the code here'".to_owned(),
        format!("  curl -s {token} \\", token = issuer.endpoint(paths::TOKEN)),
        "    --data-urlencode grant_type=authorization_code \\".to_owned(),
        format!("    --data-urlencode client_id={SPA_CLIENT} \\"),
        format!("    --data-urlencode redirect_uri={redirect_uri} \\"),
        format!("    --data-urlencode code_verifier={code_verifier} \\"),
        "    --data-urlencode \"code=$CODE\"".to_owned(),
        "The answer has access_token, id_token and refresh_token (the code works once, for 60 s). Then:".to_owned(),
        format!("  curl -s {} -H \"Authorization: Bearer $ACCESS_TOKEN\"", issuer.endpoint(paths::USERINFO)),
        format!(
            "  curl -s {} --data-urlencode grant_type=refresh_token --data-urlencode client_id={SPA_CLIENT} --data-urlencode \"refresh_token=$REFRESH_TOKEN\"",
            issuer.endpoint(paths::TOKEN)
        ),
        String::new(),
        "The GraphQL API, with the access token (each demo organization has its own jobs, work orders, customers, invoices and staff):".to_owned(),
        format!("  curl -s {}/api -H \"Authorization: Bearer $ACCESS_TOKEN\" -H 'Content-Type: application/json' \\", config.api_url),
        format!("    -d '{{\"query\": \"{API_EXAMPLE}\"}}'"),
        format!("  GraphiQL, to explore the schema in a browser: {}/api", config.api_url),
    ];
    let mut text = lines.join("\n");
    if let Some(admin) = config.admin_listen {
        let admin_lines = [
            String::new(),
            String::new(),
            format!("The admin API (docs/admin.md) listens on http://{admin}/admin/v1/. In another terminal:"),
            "  TOKEN=$(cargo run --release -q -- admin-token create --name \"me-$(date +%s)\" --json | sed 's/.*\"token\":\"\\([^\"]*\\)\".*/\\1/')".to_owned(),
            format!("  curl -s http://{admin}/admin/v1/tenants/{TENANT}/users -H \"Authorization: Bearer $TOKEN\""),
        ];
        text.push_str(&admin_lines.join("\n"));
    }
    Ok(text)
}

/// The organization with this name, created the first time.
async fn organization(
    tenant: &TenantStore<'_>,
    name: &str,
    random: &dyn RandomSource,
    now: UnixTime,
) -> anyhow::Result<String> {
    let existing = tenant.list_organizations().await?;
    if let Some(org) = existing.into_iter().find(|o| o.name == name) {
        return Ok(org.organization_guid);
    }
    let guid = random.uuid_v4()?;
    tenant.create_organization(&guid, name, now).await?;
    Ok(guid)
}

/// The user's sub, creating the user the first time and setting the new password always.
async fn user(
    tenant: &TenantStore<'_>,
    (username, name, email): (&str, &str, &str),
    password: &SecretString,
    random: &dyn RandomSource,
    now: UnixTime,
) -> anyhow::Result<String> {
    let hash = oauth::password::hash_password(password.clone(), random).await?;
    if let Some(existing) = tenant.find_user_by_username(username).await? {
        tenant.set_password_hash(&existing.user_id, &hash).await?;
        return Ok(existing.user_id);
    }
    let sub = random.uuid_v4()?;
    let new = NewUser {
        user_id: &sub,
        username,
        password_hash: &hash,
        name,
        email,
    };
    tenant
        .create_user(&new, now)
        .await
        .with_context(|| format!("demo user {username}"))?;
    Ok(sub)
}

/// 16 base64url characters: 96 random bits, short enough to type.
fn new_password(random: &dyn RandomSource) -> anyhow::Result<SecretString> {
    let mut token = random.token()?;
    token.truncate(16);
    Ok(SecretString::from(token))
}

/// Ok(true) when the record was created, Ok(false) when it was already there.
fn ignore_conflict<T>(result: Result<T, StoreError>) -> anyhow::Result<bool> {
    match result {
        Ok(_) => Ok(true),
        Err(StoreError::Conflict(_)) => Ok(false),
        Err(other) => Err(other.into()),
    }
}
