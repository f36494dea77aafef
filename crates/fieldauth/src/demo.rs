//! `fieldauth demo`: an idempotent seed of the demo tenant and the walkthrough printed on
//! start. Passwords and the confidential client's secret are stored only as hashes, so each
//! start sets fresh ones and prints them.

use anyhow::Context;
use jose::UnixTime;
use oauth::{paths, RandomSource, Scope};
use secrecy::{ExposeSecret, SecretString};
use store::{NewClient, NewUser, Store, StoreError, TenantId, TenantStore};
use url::Url;

use crate::config::ServeConfig;
use crate::demo_records;

pub const TENANT: &str = "demo";
pub const SPA_CLIENT: &str = "demo-spa";
pub const WEB_CLIENT: &str = "demo-web";
pub const SPA_REDIRECT_URI: &str = "http://127.0.0.1:8400/callback";
pub const WEB_REDIRECT_URI: &str = "http://127.0.0.1:8500/callback";
const ORGANIZATIONS: [&str; 2] = ["Northwind Plumbing", "Summit Electric"];
/// The walkthrough's API query: the next jobs with their work order, customer and crew.
pub const API_EXAMPLE: &str = "{ viewer { organization { name } } jobs(first: 5) { totalCount nodes { title status scheduledStart workOrder { number customer { name } } assignments { employee { name } } } } }";

/// The secrets set by this start, for the walkthrough.
#[derive(Debug)]
pub struct DemoSecrets {
    pub alice_password: SecretString,
    pub bob_password: SecretString,
    pub web_client_secret: SecretString,
}

pub async fn seed(
    store: &Store,
    random: &dyn RandomSource,
    now: UnixTime,
) -> anyhow::Result<DemoSecrets> {
    let tenant_id = TenantId::parse(TENANT)?;
    ignore_conflict(
        store
            .create_tenant(&tenant_id, "Demo field-service company", now)
            .await,
    )?;
    let tenant = store.tenant(&tenant_id);

    let all_scopes: Vec<String> = Scope::ALL.iter().map(|s| s.as_str().to_owned()).collect();
    let spa_uris = [SPA_REDIRECT_URI.to_owned()];
    let spa = NewClient {
        client_id: SPA_CLIENT,
        name: "Dispatch board (demo SPA)",
        secret_hash: None,
        redirect_uris: &spa_uris,
        scopes: &all_scopes,
    };
    ignore_conflict(tenant.create_client(&spa, now).await)?;
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

/// The walkthrough: where things are, the credentials, and an authorization URL with a
/// fresh PKCE pair.
pub fn walkthrough(
    config: &ServeConfig,
    secrets: &DemoSecrets,
    random: &dyn RandomSource,
) -> anyhow::Result<String> {
    let issuer = &config.issuer;
    let code_verifier = random.token()?;
    let state = random.token()?;
    let nonce = random.token()?;
    let mut authorize = Url::parse(&issuer.endpoint(paths::AUTHORIZE))?;
    authorize
        .query_pairs_mut()
        .append_pair("tenant", TENANT)
        .append_pair("response_type", "code")
        .append_pair("client_id", SPA_CLIENT)
        .append_pair("redirect_uri", SPA_REDIRECT_URI)
        .append_pair(
            "scope",
            "openid profile email offline_access jobs workOrders customers invoices employees",
        )
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
        format!("  Issuer (auth server)  {issuer}"),
        format!("  API                   {}", config.api_url),
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
        format!("  public client        {SPA_CLIENT}   redirect_uri {SPA_REDIRECT_URI}"),
        format!("  confidential client  {WEB_CLIENT}   redirect_uri {WEB_REDIRECT_URI}"),
        format!(
            "                       client_secret {}",
            secrets.web_client_secret.expose_secret()
        ),
        "  (the passwords and the client secret are new at every start; only hashes are stored)"
            .to_owned(),
        String::new(),
        "Try it:".to_owned(),
        format!("  curl -s {discovery}"),
        "  Open this authorization URL in a browser and sign in as alice:".to_owned(),
        format!("    {authorize}"),
        format!("  state {state}"),
        format!("  PKCE code_verifier for the token exchange: {code_verifier}"),
        String::new(),
        "After Sign in and Allow, the browser lands on the redirect URI (nothing listens there):".to_owned(),
        format!("copy the code from its address bar ({SPA_REDIRECT_URI}?code=demo.…&state=…&iss=…), then:"),
        "  CODE='paste the code here'".to_owned(),
        format!("  curl -s {token} \\", token = issuer.endpoint(paths::TOKEN)),
        "    --data-urlencode grant_type=authorization_code \\".to_owned(),
        format!("    --data-urlencode client_id={SPA_CLIENT} \\"),
        format!("    --data-urlencode redirect_uri={SPA_REDIRECT_URI} \\"),
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
    Ok(lines.join("\n"))
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
