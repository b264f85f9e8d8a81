//! A single gateway's console sessions, in its memory: a table by id, each ending LIFETIME after login, bounded
//! per role by MAX_SESSIONS. A restart (the only way its tokens change) ends them all.

use super::{LIFETIME, MAX_SESSIONS, Session};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Instant;

/// The live sessions by id, with when each started.
#[derive(Default)]
pub struct LocalSessions {
    live: Mutex<HashMap<String, (Session, Instant)>>,
}

impl LocalSessions {
    pub fn insert(&self, id: &str, session: Session) {
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        live.retain(|_, (_, started)| started.elapsed() < LIFETIME);
        make_room(&mut live, session.admin);
        live.insert(id.to_owned(), (session, Instant::now()));
    }

    pub fn find(&self, id: &str) -> Option<Session> {
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        match live.get(id) {
            Some((session, started)) if started.elapsed() < LIFETIME => Some(session.clone()),
            Some(_) => {
                live.remove(id);
                None
            }
            None => None,
        }
    }

    pub fn remove(&self, id: &str) {
        self.live.lock().unwrap_or_else(|e| e.into_inner()).remove(id);
    }
}

/// Makes room for one more session of a role: with MAX_SESSIONS of it live, the oldest session of the client that
/// holds the most of them ends. A login never ends a session of the other role, and a client logging in over and
/// over ends its own sessions rather than other people's.
fn make_room(live: &mut HashMap<String, (Session, Instant)>, admin: bool) {
    let mut held: HashMap<IpAddr, usize> = HashMap::new();
    for (session, _) in live.values().filter(|(s, _)| s.admin == admin) {
        *held.entry(session.client).or_default() += 1;
    }
    if held.values().sum::<usize>() < MAX_SESSIONS {
        return;
    }
    let Some(busiest) = held.into_iter().max_by_key(|(_, n)| *n).map(|(client, _)| client) else { return };
    let oldest = live
        .iter()
        .filter(|(_, (s, _))| s.admin == admin && s.client == busiest)
        .min_by_key(|(_, (_, started))| *started)
        .map(|(id, _)| id.clone());
    if let Some(id) = oldest {
        live.remove(&id);
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::tokens;
    use super::super::{COOKIE, Login, Sessions, Store};
    use super::*;

    const HERE: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

    #[tokio::test]
    async fn a_full_table_ends_a_session_of_the_same_role_and_the_busiest_client() {
        let sessions = Sessions::local(&tokens(Some("r"), Some("a")));
        let elsewhere = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 2));
        let login = async |token: &str, name: &str, client| sessions.login(token, name, client).await.unwrap().unwrap();
        let admin = login("a", "root", HERE).await;
        let ana = login("r", "ana", elsewhere).await;
        let first = login("r", "flood", HERE).await;
        for _ in 0..MAX_SESSIONS {
            login("r", "flood", HERE).await;
        }
        let live = async |login: &Login| sessions.find(&format!("{COOKIE}={}", login.id)).await.unwrap().is_some();
        assert!(live(&admin).await && live(&ana).await, "another role's and another client's sessions stay");
        assert!(!live(&first).await, "the flooding client's oldest ended");
        let Store::Local(local) = &sessions.store else { unreachable!("a local store") };
        let held = local.live.lock().unwrap().values().filter(|(s, _)| !s.admin).count();
        assert_eq!(held, MAX_SESSIONS);
    }
}
