//! Reads and watches, with who may make them decided here, once, for every
//! surface (Nacos v1, v2, v3, the console, gRPC).
//!
//! Writes decide in their use cases (`crate::service`: the [`Caller`]
//! carries its principal); a read has no command to carry it, so a surface
//! opens the read here first. Each function is one operation with one
//! permission check (etcd's `apply_auth.go` has the same shape: one check
//! per operation, whatever the front end), and what it answers is what the
//! handler may go on with: a key it may read, the configs of a namespace it
//! may list, the keys of a listen.
//!
//! The order is Nacos': its auth filter runs before the controller, so a
//! read is decided on the names as the request sends them (a blank group
//! or dataId names every one, as Nacos' `ConfigHttpResourceParser` and
//! `ConfigGrpcResourceParser` read them) before those names are checked,
//! and before the config is looked up (a config the caller may not read is
//! 403, never 404).
//!
//! [`Caller`]: crate::service::Caller

use tacos_core::ConfigKey;
use tacos_state::Access;

use crate::auth::{AuthError, Principal};

/// Reads of one principal.
#[derive(Debug, Clone, Copy)]
pub struct Reader<'a> {
    who: &'a Principal,
}

impl<'a> Reader<'a> {
    pub fn new(who: &'a Principal) -> Self {
        Reader { who }
    }

    /// A read of the config (or configs) a request names, as sent
    /// (`tenant`/`namespaceId`, `group`, `dataId`; a blank group or dataId
    /// is every one), decided before the names are checked.
    pub fn named(&self, namespace: &str, group: &str, data_id: &str) -> Result<(), AuthError> {
        self.who
            .require_named(namespace, group, data_id, Access::Read)
    }

    /// `key` (already checked), once the principal may read it.
    pub fn key(&self, key: &ConfigKey) -> Result<(), AuthError> {
        self.who.require_key(key, Access::Read)
    }

    /// The listeners of `key` on Nacos 3's admin route, which asks for the
    /// write right (its `@Secured(action = WRITE)`); the v1 route and the
    /// console ask for read ([`Reader::key`]).
    pub fn admin_listeners(&self, key: &ConfigKey) -> Result<(), AuthError> {
        self.who.require_key(key, Access::Write)
    }

    /// A list, search or export of `namespace` (as sent): refused unless
    /// the principal may read something in it; it then shows only what it
    /// may read (`crate::query::readable_configs`, [`Reader::shows`]).
    pub fn list(&self, namespace: &str) -> Result<(), AuthError> {
        self.who.require_some(namespace, Access::Read)
    }

    /// Whether a list shows `key` to the principal (a list leaves out what
    /// it may not read, where one config is refused with 403).
    pub fn shows(&self, key: &ConfigKey) -> bool {
        self.who.can_key(key, Access::Read)
    }

    /// A listen on `keys` (long poll, gRPC batch listen): every key, or
    /// refused whole (Nacos checks the first key's namespace only; one
    /// key the caller may not read refuses the listen here).
    pub fn watch<'k>(
        &self,
        keys: impl IntoIterator<Item = &'k ConfigKey>,
    ) -> Result<(), AuthError> {
        keys.into_iter()
            .try_for_each(|key| self.who.require_key(key, Access::Read))
    }

    /// A fuzzy watch of a pattern's parts: a grant must cover every key the
    /// pattern could match.
    pub fn watch_pattern(
        &self,
        namespace: &str,
        group: &str,
        data_id: &str,
    ) -> Result<(), AuthError> {
        self.who.require(namespace, group, data_id, Access::Read)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::user;

    fn user_with(grants: &[(&str, &str, &str, Access)]) -> Principal {
        user("u", false, grants)
    }

    #[test]
    fn a_read_by_names_reads_a_blank_name_as_every_one() {
        let who = user_with(&[("ns", "app", "*", Access::Read)]);
        let reader = Reader::new(&who);
        assert!(reader.named("ns", "app", "").is_ok());
        assert!(reader.named("ns", "app", "a.yaml").is_ok());
        // A blank group is every group: more than was granted.
        assert!(matches!(
            reader.named("ns", " ", "a.yaml"),
            Err(AuthError::Forbidden(_))
        ));
        // A bad name is refused by what it names, before it is checked.
        assert!(reader.named("ns", "other", "bad name!").is_err());
    }

    #[test]
    fn open_reads_everything_and_users_what_they_were_granted() {
        let open = Principal::Open;
        assert!(Reader::new(&open)
            .watch(&[ConfigKey::new("", "g", "d")])
            .is_ok());
        let who = user_with(&[("ns", "app", "*", Access::Read)]);
        let reader = Reader::new(&who);
        let mine = ConfigKey::new("ns", "app", "a");
        let theirs = ConfigKey::new("ns", "other", "a");
        assert!(reader.shows(&mine));
        assert!(!reader.shows(&theirs));
        assert!(reader.watch([&mine]).is_ok());
        assert!(reader.watch([&mine, &theirs]).is_err());
        assert!(reader.list("ns").is_ok());
        assert!(reader.list("elsewhere").is_err());
        assert!(reader.watch_pattern("ns", "app", "*").is_ok());
        assert!(reader.watch_pattern("ns", "*", "*").is_err());
    }
}
