//! HTTP proxies from the environment, as evalscope's aiohttp session (`trust_env=True`) takes them:
//! `http_proxy` / `https_proxy` (or the upper-case names; a lower-case name wins, an empty lower-case value
//! removes the proxy) by the endpoint's scheme, and `no_proxy` (`*`, or comma-separated host names matched
//! exactly or as a domain suffix, a leading dot ignored). As in aiohttp, only `http://` proxies are used (a
//! proxy URL without a scheme is taken as `http://`; an `https://` proxy is ignored with a warning), with
//! Basic authentication from the proxy URL's user and password.
//!
//! One rule of llmperf's own: a loopback endpoint (`localhost`, `127.0.0.0/8`, `::1`) is never proxied.
//!
//! The HTTP client ([`super::http1`]) sends `http://` requests to the proxy in absolute form and tunnels
//! `https://` through `CONNECT`. Credentials never reach a log or a file: only `host:port` is shown.

use std::net::IpAddr;

use base64::Engine as _;

use crate::engine::setup_error::SetupError;

/// The proxy for one endpoint.
#[derive(Clone, PartialEq, Eq)]
pub struct Proxy {
    /// Proxy host (IPv6 without brackets).
    pub host: String,
    /// Proxy port (default 80).
    pub port: u16,
    /// `Basic …` for `Proxy-Authorization`, when the proxy URL has a user.
    pub authorization: Option<String>,
    /// The variable it came from (`HTTPS_PROXY`, …), for messages.
    pub source: String,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The authorization is a secret: never printed.
        write!(f, "Proxy({}:{} from {})", self.host, self.port, self.source)
    }
}

impl Proxy {
    /// `host:port` of the proxy.
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// The environment read by [`for_url`]: (name, value) pairs.
pub type Env = Vec<(String, String)>;

/// The process environment.
pub fn process_env() -> Env {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect()
}

/// Python's `urllib.request.getproxies_environment`: scheme (`http`, `https`, `no`, …) → (value, variable).
fn proxies(env: &Env) -> Vec<(String, String, String)> {
    let mut out: Vec<(String, String, String)> = Vec::new();
    let mut set = |scheme: String, value: Option<&str>, var: &str| {
        out.retain(|(s, _, _)| *s != scheme);
        if let Some(v) = value {
            out.push((scheme, v.to_string(), var.to_string()));
        }
    };
    for (name, value) in env {
        let lower = name.to_ascii_lowercase();
        if let Some(scheme) = lower.strip_suffix("_proxy") {
            if !value.is_empty() {
                set(scheme.to_string(), Some(value), name);
            }
        }
    }
    if env.iter().any(|(k, _)| k == "REQUEST_METHOD") {
        set("http".into(), None, "");
    }
    for (name, value) in env {
        if let Some(scheme) = name.strip_suffix("_proxy") {
            let scheme = scheme.to_ascii_lowercase();
            set(scheme, (!value.is_empty()).then_some(value.as_str()), name);
        }
    }
    out
}

/// Python's `proxy_bypass_environment(host)`: whether `no_proxy` names `host`.
fn bypassed(host: &str, no_proxy: &str) -> bool {
    if no_proxy.trim() == "*" {
        return true;
    }
    let host = host.to_ascii_lowercase();
    no_proxy
        .split(',')
        .map(|n| n.trim().trim_start_matches('.').to_ascii_lowercase())
        .filter(|n| !n.is_empty())
        .any(|n| host == n || host.ends_with(&format!(".{n}")))
}

/// Whether `host` is the local machine: `localhost` or a loopback address.
pub fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The proxy for `url` under `env`, or `None`. An unusable proxy URL is an error naming its variable.
pub fn for_url(url: &reqwest::Url, env: &Env) -> Result<Option<Proxy>, SetupError> {
    let Some(host) = url.host_str() else {
        return Ok(None);
    };
    if is_loopback(host) {
        return Ok(None);
    }
    let table = proxies(env);
    let get = |scheme: &str| table.iter().find(|(s, _, _)| s == scheme);
    if let Some((_, no, _)) = get("no") {
        if bypassed(host.trim_start_matches('[').trim_end_matches(']'), no) {
            return Ok(None);
        }
    }
    let Some((_, value, var)) = get(url.scheme()) else {
        return Ok(None);
    };
    let text = if value.contains("://") {
        value.clone()
    } else {
        format!("http://{value}")
    };
    let parsed = reqwest::Url::parse(&text).map_err(|e| SetupError::ProxyUrl {
        variable: var.to_string(),
        reason: e.to_string(),
    })?;
    if parsed.scheme() != "http" {
        tracing::warn!(
            "{var}: {} proxies are not supported (as in evalscope's aiohttp), ignoring it",
            parsed.scheme().to_ascii_uppercase()
        );
        return Ok(None);
    }
    let Some(proxy_host) = parsed.host_str() else {
        return Err(SetupError::ProxyHost(var.to_string()));
    };
    let authorization = (!parsed.username().is_empty()).then(|| {
        let user = percent_decode(parsed.username());
        let password = percent_decode(parsed.password().unwrap_or(""));
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        format!("Basic {token}")
    });
    Ok(Some(Proxy {
        host: proxy_host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string(),
        port: parsed.port_or_known_default().unwrap_or(80),
        authorization,
        source: var.clone(),
    }))
}

/// `%XX` sequences decoded (user names and passwords in URLs are percent-encoded).
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Logs, once per process, that requests go through `proxy` and latencies include it.
pub fn warn_once(proxy: &Proxy, target: &str) {
    static WARNED: std::sync::Once = std::sync::Once::new();
    WARNED.call_once(|| {
        tracing::warn!(
            "Requests to {target} go through the HTTP proxy {} (from {}): latencies include the proxy; set NO_PROXY={target_host} to reach the server directly",
            proxy.authority(),
            proxy.source,
            target_host = target.rsplit_once(':').map_or(target, |(h, _)| h),
        );
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Env {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn url(s: &str) -> reqwest::Url {
        reqwest::Url::parse(s).unwrap()
    }

    #[test]
    fn scheme_picks_the_variable_and_lower_case_wins() {
        let e = env(&[
            ("HTTP_PROXY", "http://upper:1"),
            ("http_proxy", "http://lower:2"),
            ("HTTPS_PROXY", "secure:3"),
        ]);
        let p = for_url(&url("http://api.example/v1"), &e).unwrap().unwrap();
        assert_eq!(
            (p.host.as_str(), p.port, p.source.as_str()),
            ("lower", 2, "http_proxy")
        );
        let p = for_url(&url("https://api.example/v1"), &e)
            .unwrap()
            .unwrap();
        assert_eq!((p.host.as_str(), p.port), ("secure", 3));
        assert!(p.authorization.is_none());
        // An empty lower-case value removes the upper-case proxy.
        let e = env(&[("HTTP_PROXY", "http://upper:1"), ("http_proxy", "")]);
        assert_eq!(for_url(&url("http://api.example/v1"), &e).unwrap(), None);
        // CGI: HTTP_PROXY is a request header there, not a setting.
        let e = env(&[("HTTP_PROXY", "http://upper:1"), ("REQUEST_METHOD", "GET")]);
        assert_eq!(for_url(&url("http://api.example/v1"), &e).unwrap(), None);
    }

    #[test]
    fn no_proxy_and_loopback_bypass() {
        let e = env(&[
            ("HTTPS_PROXY", "http://p:8"),
            ("NO_PROXY", "internal.example, .corp"),
        ]);
        assert!(for_url(&url("https://internal.example/v1"), &e)
            .unwrap()
            .is_none());
        assert!(for_url(&url("https://a.internal.example/v1"), &e)
            .unwrap()
            .is_none());
        assert!(for_url(&url("https://gpu.corp:8000/v1"), &e)
            .unwrap()
            .is_none());
        assert!(for_url(&url("https://notinternal.example/v1"), &e)
            .unwrap()
            .is_some());
        let star = env(&[("HTTPS_PROXY", "http://p:8"), ("no_proxy", "*")]);
        assert!(for_url(&url("https://x.example/v1"), &star)
            .unwrap()
            .is_none());
        let e = env(&[("HTTP_PROXY", "http://p:8")]);
        for u in [
            "http://127.0.0.1:8000/v1",
            "http://localhost/v1",
            "http://[::1]:9/v1",
            "http://127.9.9.9/",
        ] {
            assert!(for_url(&url(u), &e).unwrap().is_none(), "{u}");
        }
    }

    #[test]
    fn credentials_become_basic_auth_and_are_never_shown() {
        let e = env(&[("HTTP_PROXY", "http://us%40er:p%3Ass@proxy.example:3128")]);
        let p = for_url(&url("http://api.example/v1"), &e).unwrap().unwrap();
        let expected = base64::engine::general_purpose::STANDARD.encode("us@er:p:ss");
        assert_eq!(
            p.authorization.as_deref(),
            Some(format!("Basic {expected}").as_str())
        );
        assert!(!format!("{p:?}").contains("p:ss") && !format!("{p:?}").contains(&expected));
        assert_eq!(p.authority(), "proxy.example:3128");
        let e = env(&[("HTTPS_PROXY", "https://p:8")]);
        assert!(
            for_url(&url("https://api.example/v1"), &e)
                .unwrap()
                .is_none(),
            "https proxies ignored"
        );
        let e = env(&[("HTTP_PROXY", "http://")]);
        assert!(for_url(&url("http://api.example/v1"), &e)
            .unwrap_err()
            .to_string()
            .contains("HTTP_PROXY"));
    }
}
