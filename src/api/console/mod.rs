//! The web console: its static files and its JSON API.
//!
//! The console is plain HTML, CSS and JavaScript modules in `web-console/`,
//! with one bundle built from npm (CodeMirror, uPlot) committed beside
//! them, all embedded into the binary ([`assets`]): a user gets it with the
//! server, and `cargo build` needs no Node. The files hold no data and are public; everything the
//! console shows comes from the JSON routes below, which need a login
//! (namespace rights are checked per request, as on the Nacos routes), and
//! from the existing login, user, permission and audit routes.
//!
//! The console API exists beside the Nacos open API because the console
//! needs what Nacos' API does not give: config counts per namespace with
//! the caller's rights, a syntax check and a diff before a publish, CAS
//! conflicts as a distinct answer, history diffs, who listens to a config,
//! import/export reports, and a cluster view gathered from every node.
//! Answers are JSON; errors are `{"error": message, "kind": ...}` with a
//! status that says what went wrong (400 bad input, 403 no right, 404, 409
//! conflict, 503 no leader). Writes go through the config service and Raft
//! like every other write, with the logged-in user as the caller (audited).
//!
//! | route | needs | what |
//! |---|---|---|
//! | `GET /tacos/api/console/namespaces` | login | namespaces the caller may read, config counts, the caller's right |
//! | `POST`, `PUT`, `DELETE /tacos/api/console/namespaces` | admin | create, rename, delete (refused while it holds configs) |
//! | `GET /tacos/api/console/configs` | login | search (blur/accurate), type filter, paging |
//! | `GET`, `POST`, `DELETE /tacos/api/console/config` | login | one config with its beta; publish (type, syntax check, CAS); delete |
//! | `POST /tacos/api/console/config/check` | login | syntax check |
//! | `POST /tacos/api/console/config/preview` | login | syntax check and diff against the current version |
//! | `POST`, `DELETE /tacos/api/console/config/beta`, `POST .../beta/promote` | login | beta publish, stop, promote |
//! | `POST /tacos/api/console/config/gray` | login | publish a tag gray (`tag`, content; the config must exist) |
//! | `DELETE /tacos/api/console/config/gray`, `POST .../gray/promote` | login | any gray version (beta, tag) by name: stop, promote |
//! | `GET /tacos/api/console/config/listeners` | login | who listens (on every node), with the md5 they hold |
//! | `GET /tacos/api/console/history`, `/history/item`, `/history/diff`; `POST /history/rollback` | login | history rows, one row, a diff of two versions, a rollback |
//! | `GET /tacos/api/console/export`, `POST /tacos/api/console/import` | login | Nacos zip export and import |
//! | `GET /tacos/api/console/cluster` | admin | every node's Raft view and health |
//! | `GET /tacos/api/console/dashboard` | admin | every node's recent samples (rates, p99s, Raft, RSS, CPU) for the charts |
//! | `GET /`, `/console`, `/console/{file}` | public | the console's static files |
//!
//! docs/console.md describes every parameter.

mod answer;
mod assets;
mod beta;
mod cluster;
mod configs;
mod dashboard;
mod diff;
mod history;
mod import_export;
mod listeners;
mod namespaces;

use super::call::Call;
use super::guard::{Need, Routes};
use answer::ConsoleError;
use tacos_app::read::Reader;
use tacos_state::ConfigKey;

pub fn routes(r: &mut Routes) {
    assets::routes(r);
    r.get(
        "/tacos/api/console/namespaces",
        Need::Login,
        namespaces::list_namespaces,
    )
    .post(
        "/tacos/api/console/namespaces",
        Need::Admin,
        namespaces::create_namespace,
    )
    .put(
        "/tacos/api/console/namespaces",
        Need::Admin,
        namespaces::update_namespace,
    )
    .delete(
        "/tacos/api/console/namespaces",
        Need::Admin,
        namespaces::delete_namespace,
    )
    .get("/tacos/api/console/configs", Need::Login, configs::list)
    .get("/tacos/api/console/config", Need::Login, configs::get)
    .post("/tacos/api/console/config", Need::Login, configs::publish)
    .delete("/tacos/api/console/config", Need::Login, configs::remove)
    .post(
        "/tacos/api/console/config/check",
        Need::Login,
        configs::check,
    )
    .post(
        "/tacos/api/console/config/preview",
        Need::Login,
        configs::preview,
    )
    .post(
        "/tacos/api/console/config/beta",
        Need::Login,
        beta::publish_beta,
    )
    .delete(
        "/tacos/api/console/config/beta",
        Need::Login,
        beta::stop_beta,
    )
    .post(
        "/tacos/api/console/config/beta/promote",
        Need::Login,
        beta::promote_beta,
    )
    .post(
        "/tacos/api/console/config/gray",
        Need::Login,
        beta::publish_tag_gray,
    )
    .delete(
        "/tacos/api/console/config/gray",
        Need::Login,
        beta::stop_gray,
    )
    .post(
        "/tacos/api/console/config/gray/promote",
        Need::Login,
        beta::promote_gray,
    )
    .get(
        "/tacos/api/console/config/listeners",
        Need::Login,
        listeners::listeners,
    )
    .get("/tacos/api/console/history", Need::Login, history::list)
    .get(
        "/tacos/api/console/history/item",
        Need::Login,
        history::item,
    )
    .get(
        "/tacos/api/console/history/diff",
        Need::Login,
        history::diff,
    )
    .post(
        "/tacos/api/console/history/rollback",
        Need::Login,
        history::rollback,
    )
    .get(
        "/tacos/api/console/export",
        Need::Login,
        import_export::export,
    )
    .post(
        "/tacos/api/console/import",
        Need::Login,
        import_export::import,
    )
    .get("/tacos/api/console/cluster", Need::Admin, cluster::overview)
    .get(
        "/tacos/api/console/dashboard",
        Need::Admin,
        dashboard::dashboard,
    );
}

/// What console handlers ask of a [`Call`].
impl Call {
    /// The config the route names by its `namespace`, `group` and `dataId`
    /// parameters (a write's use case decides whether the caller may).
    pub fn config(&self) -> Result<ConfigKey, ConsoleError> {
        configs::key_param(&self.params)
    }

    /// [`config`](Self::config), once the caller may read it.
    pub fn readable_config(&self) -> Result<ConfigKey, ConsoleError> {
        let key = self.config()?;
        self.reader().key(&key)?;
        Ok(key)
    }

    /// The caller's reads ([`tacos_app::read`]).
    pub fn reader(&self) -> Reader<'_> {
        Reader::new(&self.principal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where the console's JSON routes live.
    const API: &str = "/tacos/api/console";

    #[test]
    fn every_console_api_route_needs_a_login() {
        for route in crate::api::guard::declared() {
            if route.path.starts_with(API) {
                assert!(matches!(route.need, Need::Login | Need::Admin), "{route:?}");
            }
            if route.path == "/tacos/api/console/cluster"
                || route.path == "/tacos/api/console/dashboard"
                || (route.path == "/tacos/api/console/namespaces"
                    && route.method != actix_web::http::Method::GET)
            {
                assert_eq!(route.need, Need::Admin, "{route:?}");
            }
        }
    }
}
