//! Nacos' `ConfigController` on `/nacos/v1/cs/configs`: a read (with its
//! `beta`, `show` and `search` forms), a publish, a removal (one, or by
//! ids); the export, import and clone forms are in `import_export`.

use super::answer::{bad_request, caller, no_cache, ok_true, CONFIG_TYPE, CONTENT_MD5};

use actix_web::http::header::{self};
use actix_web::HttpResponse;

use crate::api::call::{Call, FormCall};
use crate::api::guard::refusal;
use crate::api::nacos_config::{key_from, publish_request};
use crate::api::params::{all_values, header, read_labels, url_encode, Params};
use crate::api::render::{
    content_type_for, http_date, rest_ok, v1_service_error, BetaInfo, ConfigDetail,
};
use tacos_app::gray_match;
use tacos_app::query::configs_with_ids;
use tacos_app::read::Reader;
use tacos_core::validate::InvalidInput;
use tacos_state::{GrayRule, BETA_GRAY};

/// Opens a read of `/nacos/v1/cs/configs`: may the caller read what the
/// request names (a list, search or export: something of `tenant`), and
/// may this node serve it now.
pub(super) async fn opened(call: &Call, listing: bool) -> Result<(), HttpResponse> {
    let params = &call.params;
    let allowed = if listing {
        Reader::new(&call.principal).list(params.str("tenant"))
    } else {
        crate::api::nacos_config::named_read(&call.principal, params, "tenant")
    };
    allowed.map_err(|denied| refusal(&denied))?;
    crate::api::consistency::read_barrier(&call.app, &call.req, params).await
}

/// `GET ?search=accurate|blur`: a page of the configs of `tenant` the
/// caller may read.
pub(super) async fn search(call: FormCall) -> HttpResponse {
    if let Err(refused) = opened(&call, true).await {
        return refused;
    }
    let FormCall(Call {
        app,
        principal,
        params,
        ..
    }) = call;
    let mode = params.str("search");
    match crate::api::nacos_config::search(
        &app.service.state(),
        &principal,
        &params,
        mode,
        "tenant",
    ) {
        Ok(page) => HttpResponse::Ok().json(page),
        Err(e) => bad_request(e),
    }
}

/// `GET ?beta=true`: Nacos' `queryBeta`, the beta itself (whoever asks).
pub(super) async fn beta(call: FormCall) -> HttpResponse {
    if let Err(refused) = opened(&call, false).await {
        return refused;
    }
    let key = match key_from(&call.params, "tenant") {
        Ok(key) => key,
        Err(e) => return bad_request(e),
    };
    let state = call.app.service.state();
    let config = state.config(&key);
    let beta = state
        .gray(&key, BETA_GRAY)
        .map(|b| BetaInfo::new(&key, b, config.map(|c| c.as_ref())));
    rest_ok(Some("query beta ok"), beta)
}

/// `GET ?show=all`: the config with its metadata (Nacos' `detailConfigInfo`).
pub(super) async fn detail(call: FormCall) -> HttpResponse {
    if let Err(refused) = opened(&call, false).await {
        return refused;
    }
    let key = match key_from(&call.params, "tenant") {
        Ok(key) => key,
        Err(e) => return bad_request(e),
    };
    match call.app.service.state().config(&key) {
        Some(c) => HttpResponse::Ok().json(ConfigDetail::new(&key, c)),
        None => HttpResponse::NotFound().body("config data not exist\n"),
    }
}

/// `GET`: the content a client at this IP (and with this tag) sees: a gray
/// version that matches it, else the config.
pub(super) async fn read(call: FormCall) -> HttpResponse {
    if let Err(refused) = opened(&call, false).await {
        return refused;
    }
    let FormCall(Call {
        app, params, req, ..
    }) = call;
    let key = match key_from(&params, "tenant") {
        Ok(key) => key,
        Err(e) => return bad_request(e),
    };
    let state = app.service.state();
    let config = state.config(&key);
    let (labels, explicit_tag) = read_labels(&req, &params, !state.grays(&key).is_empty());
    let config_type = config.map_or("text", |c| c.config_type.as_str());
    let Some(served) = gray_match::served(&state, &key, &labels, explicit_tag) else {
        return HttpResponse::NotFound()
            .content_type("text/plain;charset=UTF-8")
            .body("config data not exist\n");
    };
    let mut answer = HttpResponse::Ok();
    no_cache(&mut answer)
        .insert_header((CONFIG_TYPE, config_type))
        .insert_header((CONTENT_MD5, served.md5()))
        .insert_header((header::LAST_MODIFIED, http_date(served.modify_time())));
    // Nacos' ConfigServletInner: the key a client's encryption plugin
    // needs to decrypt the content (sent here only when there is one).
    if !served.encrypted_data_key().is_empty() {
        answer.insert_header(("Encrypted-Data-Key", served.encrypted_data_key()));
    }
    // Which gray answered, as Nacos' ConfigServletInner says it.
    match served.gray().map(|g| &g.rule) {
        Some(GrayRule::Beta { .. }) => {
            answer.insert_header(("isBeta", "true"));
        }
        Some(GrayRule::Tag { tag }) => {
            answer.insert_header(("tag", url_encode(tag)));
        }
        None => {}
    }
    answer
        .content_type(content_type_for(config_type))
        .body(served.content().to_string())
}

/// `POST`: a publish (a beta with the `betaIps` header, a tag gray with
/// `tag`), as the publish use case decides.
pub(super) async fn publish(call: FormCall) -> HttpResponse {
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        ..
    }) = call;
    let request = match publish_request(
        &params,
        "tenant",
        header(&req, "betaIps"),
        header(&req, "casMd5"),
    ) {
        Ok(r) => r,
        Err(e) => return bad_request(e),
    };
    match app
        .service
        .publish(request, &caller(&req, &params, &principal))
        .await
    {
        Ok(_) => ok_true(),
        Err(e) => v1_service_error(&e),
    }
}

/// The config a removal names (`dataId`, `group` required; `tenant`).
fn named(params: &Params) -> Result<(&str, &str, &str), InvalidInput> {
    Ok((
        params.str("tenant"),
        params.required("group")?,
        params.required("dataId")?,
    ))
}

/// `DELETE`: removes the config (with `tag`: that tag's gray version only).
pub(super) async fn remove(call: FormCall) -> HttpResponse {
    removal(call, false).await
}

/// `DELETE ?beta=true`: Nacos' `stopBeta`, answered with its `RestResult`
/// rather than the plain `true`.
pub(super) async fn stop_beta(call: FormCall) -> HttpResponse {
    removal(call, true).await
}

async fn removal(call: FormCall, beta: bool) -> HttpResponse {
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        ..
    }) = call;
    let caller = caller(&req, &params, &principal);
    let (namespace, group, data_id) = match named(&params) {
        Ok(names) => names,
        Err(e) => return bad_request(e),
    };
    let service = &app.service;
    if beta {
        return match service.stop_beta(namespace, group, data_id, &caller).await {
            Ok(_) => rest_ok(Some("stop beta ok"), true),
            Err(e) => v1_service_error(&e),
        };
    }
    match service
        .remove(namespace, group, data_id, params.str("tag"), &caller)
        .await
    {
        Ok(_) => ok_true(),
        Err(e) => v1_service_error(&e),
    }
}

/// `DELETE ?delType=ids&ids=1,2`: removes the configs with these ids (ids
/// of no config are skipped, as Nacos does), each its own write; answers
/// Nacos' `RestResult` `{code:200, message:null, data:true}`.
pub(super) async fn remove_by_ids(call: FormCall) -> HttpResponse {
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        body,
    }) = call;
    let Some(raw) = all_values(&req, &body, "ids") else {
        return bad_request(InvalidInput::Missing("ids"));
    };
    let ids: Vec<u64> = match raw.iter().map(|id| id.parse()).collect() {
        Ok(ids) => ids,
        Err(_) => return bad_request(InvalidInput::Other("ids", raw.join(","))),
    };
    let keys = configs_with_ids(&app.service.state(), &ids);
    match app
        .service
        .remove_each(&keys, &caller(&req, &params, &principal))
        .await
    {
        Ok(_) => rest_ok(None, true),
        Err(e) => v1_service_error(&e),
    }
}
