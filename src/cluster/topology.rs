//! The three shapes of Redis a fleet can share, read from the URL forms people already write: one primary
//! (`redis://`, `rediss://`), a Redis Cluster by its seed nodes (`redis+cluster://host:port,host:port,…`) and a
//! primary found through Sentinel (`redis+sentinel://host:port,host:port,…/<master name>[/<db>]`), each with an
//! `s` after `redis` for TLS.

/// Where the shared Redis is, as the URL says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Topology {
    /// One primary (failover, if any, behind one address): the URL as given.
    Single,
    /// A Redis Cluster: one `redis://` (or `rediss://`) URL per seed node, credentials included.
    Cluster { nodes: Vec<String> },
    /// A primary found through Sentinel: one URL per sentinel, the master's name as the sentinels know it, and the
    /// database on it. The URL's credentials are for the Redis nodes and the sentinels alike.
    Sentinel { sentinels: Vec<String>, master: String, db: i64, username: Option<String>, password: Option<String> },
}

impl Topology {
    /// Reads a URL; the error names what is wrong with it.
    pub fn parse(url: &str) -> Result<Self, String> {
        let (scheme, rest) = url.split_once("://").ok_or("no scheme: write redis://host:port")?;
        let (tls, shape) = match scheme {
            "redis" | "rediss" => return single(url).map(|()| Self::Single),
            "redis+cluster" => (false, "cluster"),
            "rediss+cluster" => (true, "cluster"),
            "redis+sentinel" => (false, "sentinel"),
            "rediss+sentinel" => (true, "sentinel"),
            _ => {
                return Err(format!(
                    "the scheme {scheme}:// is none of redis, rediss, redis+cluster, rediss+cluster, redis+sentinel, rediss+sentinel"
                ));
            }
        };
        if rest.contains(['?', '#']) {
            return Err("a query or fragment is not read: give the settings in [cluster]".into());
        }
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let (userinfo, hosts) = authority.rsplit_once('@').map_or((None, authority), |(u, h)| (Some(u), h));
        let nodes = node_urls(tls, userinfo, hosts)?;
        if shape == "cluster" {
            if !path.is_empty() {
                return Err(format!("a Redis Cluster has database 0 only: drop /{path}"));
            }
            return Ok(Self::Cluster { nodes });
        }
        let mut parts = path.split('/');
        let master =
            parts.next().filter(|name| !name.is_empty()).ok_or("no master name: end the URL with /<master name>")?;
        let db = match parts.next() {
            None | Some("") => 0,
            Some(db) => db.parse().map_err(|_| format!("the database {db:?} is not a number"))?,
        };
        if parts.next().is_some() {
            return Err("the path is /<master name>[/<db>]".into());
        }
        let first = url::Url::parse(&nodes[0]).map_err(|e| e.to_string())?;
        let decode = |text: &str| percent_decode(text);
        Ok(Self::Sentinel {
            sentinels: nodes,
            master: decode(master),
            db,
            username: Some(decode(first.username())).filter(|name| !name.is_empty()),
            password: first.password().map(decode),
        })
    }

    /// Whether keys that one script touches must share a hash slot.
    pub fn is_sharded(&self) -> bool {
        matches!(self, Self::Cluster { .. })
    }
}

/// A one-primary URL, checked as before.
fn single(url: &str) -> Result<(), String> {
    let parsed = url::Url::parse(url).map_err(|e| e.to_string())?;
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err("no host".into());
    }
    Ok(())
}

/// `host:port,host:port` as one URL per node, each checked.
fn node_urls(tls: bool, userinfo: Option<&str>, hosts: &str) -> Result<Vec<String>, String> {
    let scheme = if tls { "rediss" } else { "redis" };
    let auth = userinfo.map(|u| format!("{u}@")).unwrap_or_default();
    let nodes: Vec<String> = hosts
        .split(',')
        .map(|host| {
            if host.is_empty() {
                return Err("an empty host in the list".to_owned());
            }
            let node = format!("{scheme}://{auth}{host}");
            let parsed = url::Url::parse(&node).map_err(|e| format!("{host:?}: {e}"))?;
            if parsed.port().is_none() {
                return Err(format!("{host:?} has no port"));
            }
            Ok(node)
        })
        .collect::<Result<_, _>>()?;
    if nodes.is_empty() {
        return Err("no host".into());
    }
    Ok(nodes)
}

fn percent_decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text).decode_utf8_lossy().into_owned()
}

/// The URL with its password, if any, replaced by `***`: for logs and errors. Written by hand because a list of
/// hosts is no URL the `url` crate reads.
pub fn hide_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    // The last `@`, even past a `/`: a password may hold one unencoded.
    let Some(at) = rest.rfind('@') else { return url.to_owned() };
    let userinfo = &rest[..at];
    let shown = match userinfo.split_once(':') {
        Some((user, _)) => format!("{user}:***"),
        None => "***".to_owned(),
    };
    format!("{scheme}://{shown}{}", &rest[at..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_shapes_from_their_urls() {
        assert_eq!(Topology::parse("redis://127.0.0.1:6379/0"), Ok(Topology::Single));
        assert_eq!(
            Topology::parse("rediss+cluster://:pw@10.0.0.1:7000,[::1]:7001"),
            Ok(Topology::Cluster {
                nodes: vec!["rediss://:pw@10.0.0.1:7000".into(), "rediss://:pw@[::1]:7001".into()]
            })
        );
        assert_eq!(
            Topology::parse("redis+sentinel://user:p%40s+s@s1:26379,s2:26380/mymaster/2"),
            Ok(Topology::Sentinel {
                sentinels: vec!["redis://user:p%40s+s@s1:26379".into(), "redis://user:p%40s+s@s2:26380".into()],
                master: "mymaster".into(),
                db: 2,
                username: Some("user".into()),
                password: Some("p@s+s".into()),
            })
        );
    }

    #[test]
    fn a_wrong_url_says_what_is_wrong() {
        let cases = [
            ("http://x:1", "scheme"),
            ("redis+cluster://a:1,,b:2", "empty host"),
            ("redis+cluster://a,b:2", "no port"),
            ("redis+cluster://a:1/3", "database 0 only"),
            ("redis+sentinel://a:26379", "no master name"),
            ("redis+sentinel://a:26379/m/x", "not a number"),
            ("redis+sentinel://a:26379/m?x=1", "query"),
            ("127.0.0.1:6379", "no scheme"),
        ];
        for (url, why) in cases {
            let err = Topology::parse(url).unwrap_err();
            assert!(err.contains(why), "{url}: {err}");
        }
    }

    #[test]
    fn the_password_is_hidden_in_every_shape() {
        for url in [
            "redis://:secret@h:1/0",
            "redis+cluster://u:secret@a:1,b:2",
            "rediss+sentinel://secret@a:1/m",
            "redis://:se/cret@h:1",
        ] {
            let shown = hide_password(url);
            assert!(!shown.contains("secret") && shown.contains("***"), "{shown}");
        }
        assert_eq!(hide_password("redis://h:1"), "redis://h:1");
    }
}
