//! Nacos 3's HTTP API (`/nacos/v3/...`), first slice: the client's config
//! read, the admin config, history and namespace routes, login, and the
//! server state. Thin adapters like the v2 routes: parse Nacos 3's
//! parameters (`namespaceId`, `groupName`, `dataId`, ...), call one use
//! case or query rule of `tacos_app`, render Nacos 3's answer: the
//! `Result {code, message, data}` envelope shared with v2 and the field
//! names of Nacos 3's models ([`model`]).
//!
//! | route | needs | what |
//! |---|---|---|
//! | `GET /nacos/v3/client/cs/config` | open API | the config for this client (a beta for its IP) as `ConfigQueryResponse`; absent: 200 with code 20004 |
//! | `GET`, `POST`, `DELETE /nacos/v3/admin/cs/config` | login | one config (`ConfigDetailInfo`), publish (headers `casMd5`, `betaIps`), delete |
//! | `GET /nacos/v3/admin/cs/config/list` | login | search (`search=blur` default, `accurate`), paging: `Page<ConfigBasicInfo>` |
//! | `DELETE /nacos/v3/admin/cs/config/batch` | login | `ids`: delete configs by id |
//! | `GET /nacos/v3/admin/cs/config/export`, `POST /import`, `POST /clone` | login | a zip of configs (`.metadata.yml`), a zip into a namespace, copies of configs by id (one write each) |
//! | `GET`, `DELETE /nacos/v3/admin/cs/config/beta` | login | the beta (`ConfigGrayInfo`), stop it |
//! | `GET /nacos/v3/admin/cs/config/listener` | login | who listens (client IP → md5), on every node unless `aggregation=false` |
//! | `GET /nacos/v3/admin/cs/listener` | login | what one client IP listens to (group key → md5), on every node unless `aggregation=false` |
//! | `GET /nacos/v3/admin/cs/history` (`nid`), `/list`, `/previous` (`id`), `/configs` | login | history rows of a config, configs of a namespace |
//! | `GET /nacos/v3/admin/core/namespace` (one), `/list`, `/check` | login | namespaces the caller may read |
//! | `POST`, `PUT`, `DELETE /nacos/v3/admin/core/namespace` | admin | create, rename, delete |
//! | `POST /nacos/v3/auth/user/login` | public | `username`, `password` → token |
//! | `POST /nacos/v3/auth/user/admin` | public | the first admin: Tacos always has one (code 409) |
//! | `POST`, `DELETE /nacos/v3/auth/user`, `GET /list`, `/search` | admin | users (`auth`) |
//! | `PUT /nacos/v3/auth/user` | login | own password (admins: anyone's) |
//! | `POST`, `DELETE /nacos/v3/auth/role`, `GET /list`, `/search` | admin | role bindings |
//! | `GET`, `POST`, `DELETE /nacos/v3/auth/permission`, `GET /list` | admin | role permissions (`NAMESPACE:*:*`) |
//! | `GET /nacos/v3/admin/core/state`, `/state/liveness`, `/state/readiness` | public | server state (as Nacos: no login) |
//! | `GET /nacos/v3/admin/core/cluster/node/list` | admin | the members (`core`: shared with v1 and v2) |
//!
//! Admin routes need a login (Nacos 3 always authenticates its admin API);
//! the namespace right (read to look, write to change) is checked per
//! request as on the other routes. Errors are Nacos 3's: the parameter
//! filter's plain-text 400 for illegal or too long keys (with
//! `--param-check`, as Nacos 3 by default), then the envelope
//! with its codes (10000 missing, 20002 invalid, 20004 not found, 20005 CAS
//! conflict, 22000-22002 namespaces, 30000 server error). docs/http-api.md
//! lists where Tacos answers differently and why.

mod answer;
mod auth;
mod config;
mod history;
mod model;
pub(super) mod namespaces;
mod params;
mod server;

use super::guard::{Need, Routes};

pub fn routes(r: &mut Routes) {
    const CONFIG: &str = "/nacos/v3/admin/cs/config";
    const NAMESPACE: &str = "/nacos/v3/admin/core/namespace";
    const USER: &str = "/nacos/v3/auth/user";
    const ROLE: &str = "/nacos/v3/auth/role";
    const PERMISSION: &str = "/nacos/v3/auth/permission";
    r.get(
        "/nacos/v3/client/cs/config",
        Need::OpenApi,
        config::client_get,
    )
    .get(CONFIG, Need::Login, config::get)
    .post(CONFIG, Need::Login, config::publish)
    .delete(CONFIG, Need::Login, config::delete)
    .get("/nacos/v3/admin/cs/config/list", Need::Login, config::list)
    .delete(
        "/nacos/v3/admin/cs/config/batch",
        Need::Login,
        config::delete_batch,
    )
    .get(
        "/nacos/v3/admin/cs/config/export",
        Need::Login,
        config::export,
    )
    .post(
        "/nacos/v3/admin/cs/config/import",
        Need::Login,
        config::import,
    )
    .post(
        "/nacos/v3/admin/cs/config/clone",
        Need::Login,
        config::clone,
    )
    .get("/nacos/v3/admin/cs/config/beta", Need::Login, config::beta)
    .delete(
        "/nacos/v3/admin/cs/config/beta",
        Need::Login,
        config::stop_beta,
    )
    .get(
        "/nacos/v3/admin/cs/config/listener",
        Need::Login,
        config::listeners,
    )
    .get(
        "/nacos/v3/admin/cs/listener",
        Need::Login,
        config::listened_by_ip,
    )
    .get("/nacos/v3/admin/cs/history", Need::Login, history::one)
    .get(
        "/nacos/v3/admin/cs/history/list",
        Need::Login,
        history::list,
    )
    .get(
        "/nacos/v3/admin/cs/history/previous",
        Need::Login,
        history::previous,
    )
    .get(
        "/nacos/v3/admin/cs/history/configs",
        Need::Login,
        history::configs,
    )
    .get(NAMESPACE, Need::Login, namespaces::one)
    .post(NAMESPACE, Need::Admin, namespaces::create)
    .put(NAMESPACE, Need::Admin, namespaces::update)
    .delete(NAMESPACE, Need::Admin, namespaces::delete)
    .get(
        "/nacos/v3/admin/core/namespace/list",
        Need::Login,
        namespaces::list,
    )
    .get(
        "/nacos/v3/admin/core/namespace/check",
        Need::Login,
        namespaces::check,
    )
    .post("/nacos/v3/auth/user/login", Need::Public, server::login)
    .post(
        "/nacos/v3/auth/user/admin",
        Need::Public,
        auth::create_admin,
    )
    .post(USER, Need::Admin, auth::create_user)
    .put(USER, Need::Login, auth::update_user)
    .delete(USER, Need::Admin, auth::delete_user)
    .get("/nacos/v3/auth/user/list", Need::Admin, auth::list_users)
    .get(
        "/nacos/v3/auth/user/search",
        Need::Admin,
        auth::search_users,
    )
    .post(ROLE, Need::Admin, auth::bind_role)
    .delete(ROLE, Need::Admin, auth::unbind_role)
    .get("/nacos/v3/auth/role/list", Need::Admin, auth::list_roles)
    .get(
        "/nacos/v3/auth/role/search",
        Need::Admin,
        auth::search_roles,
    )
    .get(PERMISSION, Need::Admin, auth::is_duplicate)
    .post(PERMISSION, Need::Admin, auth::grant)
    .delete(PERMISSION, Need::Admin, auth::revoke)
    .get(
        "/nacos/v3/auth/permission/list",
        Need::Admin,
        auth::list_permissions,
    )
    .get("/nacos/v3/admin/core/state", Need::Public, server::state)
    .get(
        "/nacos/v3/admin/core/state/liveness",
        Need::Public,
        server::liveness,
    )
    .get(
        "/nacos/v3/admin/core/state/readiness",
        Need::Public,
        server::readiness,
    );
}

#[cfg(test)]
mod tests {
    use crate::api::guard::{declared, Need};

    #[test]
    fn v3_routes_need_what_nacos_3_needs() {
        let v3: Vec<_> = declared()
            .into_iter()
            .filter(|r| r.path.starts_with("/nacos/v3/"))
            .collect();
        assert!(v3.len() >= 20, "{v3:?}");
        for route in &v3 {
            let expected = if route.path.starts_with("/nacos/v3/admin/core/state")
                || route.path == "/nacos/v3/auth/user/login"
                || route.path == "/nacos/v3/auth/user/admin"
            {
                vec![Need::Public]
            } else if route.path == "/nacos/v3/auth/user"
                && route.method == actix_web::http::Method::PUT
            {
                // Own password: a login; the handler checks the rest.
                vec![Need::Login]
            } else if route.path.starts_with("/nacos/v3/auth/") {
                vec![Need::Admin]
            } else if route.path.starts_with("/nacos/v3/client/") {
                vec![Need::OpenApi]
            } else if route.path.starts_with("/nacos/v3/admin/core/namespace")
                && route.method != actix_web::http::Method::GET
            {
                vec![Need::Admin]
            } else {
                assert!(route.path.starts_with("/nacos/v3/admin/"), "{route:?}");
                vec![Need::Login, Need::Admin]
            };
            assert!(expected.contains(&route.need), "{route:?}");
        }
    }
}
