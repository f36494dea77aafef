//! The client's address: the connection's peer, or, when the peer is a trusted proxy, the
//! address the proxies forwarded (`--trusted-proxies`). The sign-in throttle, the audit
//! trail and the request log all use this one address.
//!
//! The forwarded chain is read from the right, the end our own proxies appended, skipping
//! trusted hops: the first untrusted address is the client. Anything to its left was written
//! by that client and proves nothing. `Forwarded` (RFC 7239) wins over `X-Forwarded-For`
//! when a request carries both; a value that is not an address (`unknown`, an obfuscated
//! `_hidden`) ends the walk at the trusted hop that reported it.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use axum::http::HeaderMap;
use ipnet::IpNet;

/// The client's IP address, as [`TrustedProxies::client_address`] resolved it for this
/// request (the binary puts it in the request's extensions), else the connection's peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientAddress(pub IpAddr);

impl<S: Send + Sync> FromRequestParts<S> for ClientAddress {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        _state: &S,
    ) -> Result<ClientAddress, Self::Rejection> {
        if let Some(address) = parts.extensions.get::<ClientAddress>() {
            return Ok(*address);
        }
        let ip = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |info| info.0.ip());
        Ok(ClientAddress(canonical(ip)))
    }
}

/// The networks whose requests may name the client in `Forwarded` or `X-Forwarded-For`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<IpNet>);

/// A `--trusted-proxies` entry that is not an address or a CIDR network.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0:?} is not an IP address or CIDR network (such as 10.0.0.0/8 or fd00::/8)")]
pub struct InvalidProxy(pub String);

impl TrustedProxies {
    /// A comma-separated list of addresses and CIDR networks; a bare address is its own /32
    /// or /128. Empty: no proxy is trusted.
    pub fn parse(list: &str) -> Result<TrustedProxies, InvalidProxy> {
        let networks = list
            .split(',')
            .map(str::trim)
            .filter(|entry| !entry.is_empty())
            .map(|entry| {
                entry
                    .parse::<IpNet>()
                    .or_else(|_| entry.parse::<IpAddr>().map(IpNet::from))
                    .map(|net| net.trunc())
                    .map_err(|_| InvalidProxy(entry.to_owned()))
            })
            .collect::<Result<_, _>>()?;
        Ok(TrustedProxies(networks))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn trusts(&self, address: IpAddr) -> bool {
        self.0.iter().any(|net| net.contains(&address))
    }

    /// The client's address for a request from `peer` with these headers.
    pub fn client_address(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        let peer = canonical(peer);
        if !self.trusts(peer) {
            return peer;
        }
        let chain = match forwarded_for(headers) {
            Some(chain) => chain,
            None => x_forwarded_for(headers),
        };
        let mut client = peer;
        for hop in chain.iter().rev() {
            match hop {
                Some(address) => {
                    client = canonical(*address);
                    if !self.trusts(client) {
                        return client;
                    }
                }
                // A trusted proxy could not name the hop before it: the proxy is as far as
                // anything can be known.
                None => return client,
            }
        }
        client
    }
}

/// An IPv4 address written as IPv6 (`::ffff:192.0.2.1`, as a dual-stack socket reports it)
/// is the IPv4 address, so networks and throttle buckets match either way.
fn canonical(address: IpAddr) -> IpAddr {
    address.to_canonical()
}

/// The `for=` values of every `Forwarded` header in order (RFC 7239 §4: elements separated
/// by commas, pairs by semicolons); `None` when no header carries one. Each is the address,
/// or `None` for a node that is not one.
fn forwarded_for(headers: &HeaderMap) -> Option<Vec<Option<IpAddr>>> {
    let mut chain = Vec::new();
    for value in headers.get_all("forwarded") {
        let Ok(value) = value.to_str() else {
            chain.push(None);
            continue;
        };
        for element in split_outside_quotes(value, ',') {
            let node = split_outside_quotes(element, ';').find_map(|pair| {
                let (name, value) = pair.split_once('=')?;
                name.trim()
                    .eq_ignore_ascii_case("for")
                    .then(|| node_address(value.trim()))
            });
            // An element without `for=` says nothing of the client; one with it is a hop.
            if let Some(node) = node {
                chain.push(node);
            }
        }
    }
    (!chain.is_empty()).then_some(chain)
}

/// RFC 7239 §6: a node is an IPv4 address, a bracketed IPv6 address, either with a port, or
/// an obfuscated identifier or `unknown`; quoted when it has a colon or brackets.
fn node_address(value: &str) -> Option<IpAddr> {
    let value = value
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .unwrap_or(value);
    if let Some(rest) = value.strip_prefix('[') {
        let (address, _port) = rest.split_once(']')?;
        return address.parse().ok();
    }
    match value.split_once(':') {
        Some((address, _port)) => address.parse::<Ipv4Addr>().ok().map(IpAddr::V4),
        None => value.parse().ok(),
    }
}

/// `X-Forwarded-For` of every header in order: comma-separated addresses.
fn x_forwarded_for(headers: &HeaderMap) -> Vec<Option<IpAddr>> {
    headers
        .get_all("x-forwarded-for")
        .iter()
        .flat_map(|value| match value.to_str() {
            Ok(text) => text.split(',').map(|hop| hop_address(hop.trim())).collect(),
            Err(_) => vec![None],
        })
        .collect()
}

/// An `X-Forwarded-For` hop: an address, possibly with a port as some proxies write it.
fn hop_address(hop: &str) -> Option<IpAddr> {
    hop.parse()
        .ok()
        .or_else(|| node_address(hop))
        .or_else(|| hop.parse::<SocketAddr>().ok().map(|s| s.ip()))
}

/// `text` split at `separator`s that are not inside a quoted string.
fn split_outside_quotes(text: &str, separator: char) -> impl Iterator<Item = &str> {
    let mut quoted = false;
    let mut escaped = false;
    let mut start = 0;
    let mut parts = Vec::new();
    for (i, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            c if c == separator && !quoted => {
                parts.push(&text[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts.into_iter()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_static(value));
        }
        map
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    fn proxies(list: &str) -> TrustedProxies {
        TrustedProxies::parse(list).unwrap()
    }

    #[test]
    fn the_list_takes_networks_and_bare_addresses() {
        let list = proxies(" 10.0.0.0/8, 192.0.2.7 ,fd00::/8,");
        assert!(list.trusts(ip("10.1.2.3")));
        assert!(list.trusts(ip("192.0.2.7")));
        assert!(!list.trusts(ip("192.0.2.8")));
        assert!(list.trusts(ip("fd12::1")));
        assert!(proxies("").is_empty());
        for bad in ["10.0.0.0/33", "proxy.internal", "10.0.0", "::1/129", "*"] {
            assert_eq!(
                TrustedProxies::parse(bad),
                Err(InvalidProxy(bad.to_owned()))
            );
        }
    }

    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_forwards() {
        let spoofed = headers(&[
            ("x-forwarded-for", "203.0.113.9"),
            ("forwarded", "for=203.0.113.9"),
        ]);
        let peer = ip("198.51.100.4");
        assert_eq!(proxies("").client_address(peer, &spoofed), peer);
        assert_eq!(proxies("10.0.0.0/8").client_address(peer, &spoofed), peer);
    }

    #[test]
    fn the_walk_from_the_right_skips_trusted_hops_and_stops_at_the_first_other() {
        let list = proxies("10.0.0.0/8");
        let peer = ip("10.0.0.1");
        // The client wrote the leftmost value itself; the trusted hops appended the rest.
        let chain = headers(&[("x-forwarded-for", "1.1.1.1, 203.0.113.9, 10.0.0.2")]);
        assert_eq!(list.client_address(peer, &chain), ip("203.0.113.9"));
        // Across several header lines, in order.
        let split = headers(&[
            ("x-forwarded-for", "1.1.1.1"),
            ("x-forwarded-for", "203.0.113.9, 10.0.0.2"),
        ]);
        assert_eq!(list.client_address(peer, &split), ip("203.0.113.9"));
        // Every hop trusted: the leftmost is the client.
        let internal = headers(&[("x-forwarded-for", "10.9.9.9, 10.0.0.2")]);
        assert_eq!(list.client_address(peer, &internal), ip("10.9.9.9"));
        // Nothing forwarded: the trusted peer itself.
        assert_eq!(list.client_address(peer, &HeaderMap::new()), peer);
        // An unreadable hop ends the walk at the proxy that wrote it.
        let garbled = headers(&[("x-forwarded-for", "203.0.113.9, garbage, 10.0.0.2")]);
        assert_eq!(list.client_address(peer, &garbled), ip("10.0.0.2"));
    }

    #[test]
    fn forwarded_is_read_as_rfc_7239_writes_it_and_wins_over_x_forwarded_for() {
        let list = proxies("10.0.0.0/8, 2001:db8:cafe::/48");
        let peer = ip("10.0.0.1");
        let both = headers(&[
            ("x-forwarded-for", "198.51.100.1"),
            (
                "forwarded",
                r#"for=192.0.2.60;proto=http;by=203.0.113.43, For="[2001:db8:cafe::17]:4711""#,
            ),
        ]);
        assert_eq!(list.client_address(peer, &both), ip("192.0.2.60"));
        let port = headers(&[("forwarded", r#"for="198.51.100.17:4711";proto=https"#)]);
        assert_eq!(list.client_address(peer, &port), ip("198.51.100.17"));
        let v6 = headers(&[("forwarded", r#"for="[2001:db8::9]""#)]);
        assert_eq!(list.client_address(peer, &v6), ip("2001:db8::9"));
        // A quoted comma or semicolon does not split.
        let quoted = headers(&[(
            "forwarded",
            r#"for=198.51.100.3;host="a,b;c", for=10.0.0.5"#,
        )]);
        assert_eq!(list.client_address(peer, &quoted), ip("198.51.100.3"));
        // `unknown` and obfuscated nodes stop the walk at the trusted hop that reported them.
        let hidden = headers(&[("forwarded", "for=_hidden, for=10.0.0.5")]);
        assert_eq!(list.client_address(peer, &hidden), ip("10.0.0.5"));
        let unknown = headers(&[("forwarded", "for=unknown")]);
        assert_eq!(list.client_address(peer, &unknown), peer);
        // Elements without `for=` are not hops; without any, X-Forwarded-For is read.
        let proto_only = headers(&[
            ("forwarded", "proto=https"),
            ("x-forwarded-for", "198.51.100.1"),
        ]);
        assert_eq!(list.client_address(peer, &proto_only), ip("198.51.100.1"));
    }

    #[test]
    fn ipv4_mapped_addresses_are_ipv4() {
        let list = proxies("10.0.0.0/8");
        let chain = headers(&[("x-forwarded-for", "::ffff:203.0.113.9")]);
        assert_eq!(
            list.client_address(ip("::ffff:10.0.0.1"), &chain),
            ip("203.0.113.9")
        );
    }
}
