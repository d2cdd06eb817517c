//! Auth at cluster init: the first leader draws the token signing key (or
//! takes `--token-secret`) and creates the first admin, with
//! `--admin-password` or a generated password, in one `InitAuth` command.
//! The first `InitAuth` applied wins; later ones are refused, so any node
//! may try and exactly one set of secrets takes effect.
//!
//! A generated password is written to `DATA_DIR/initial-admin-password`
//! (mode 0600) *before* it is proposed, so it cannot be lost if the node
//! dies between commit and printing; if another node's `InitAuth` won, the
//! file is removed again. It is printed once in the log when it took effect.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::{password, Auth, AuthError};
use crate::service::{Caller, ServiceError, Writer};
use tacos_core::command as pb;
use tacos_core::now_ms;
use tacos_core::Op;
use tacos_raft::node::Node;
use tacos_state::ApplyError;

/// The file a generated first-admin password is written to.
pub const PASSWORD_FILE: &str = "initial-admin-password";

/// What init uses.
#[derive(Clone)]
pub struct InitSettings {
    pub admin_username: String,
    pub admin_password: Option<String>,
    pub token_key: Option<Vec<u8>>,
    pub data_dir: PathBuf,
    pub audit_limit: u32,
}

/// Secrets drawn once per process and reused across attempts.
struct Prepared {
    key: Vec<u8>,
    password: String,
    generated: bool,
    hash: String,
}

fn write_password_file(path: &Path, password: &str) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(format!("{password}\n").as_bytes())?;
    file.sync_all()
}

/// Runs until the cluster's auth is initialized (by this node or another).
pub async fn run(node: Arc<Node>, auth: Arc<Auth>, settings: InitSettings) {
    let writer = Writer::new(node.clone(), settings.audit_limit);
    let file = settings.data_dir.join(PASSWORD_FILE);
    let mut prepared: Option<Prepared> = None;
    loop {
        if node.state().auth_key().is_some() {
            settle(&node, &auth, &settings, prepared.as_ref(), &file).await;
            return;
        }
        if !node.is_leader() {
            tokio::time::sleep(Duration::from_millis(250)).await;
            continue;
        }
        if prepared.is_none() {
            match prepare(&auth, &settings, &file).await {
                Ok(p) => prepared = Some(p),
                Err(e) => {
                    tracing::error!("cannot prepare auth init: {e}; retrying");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            }
        }
        let Some(p) = prepared.as_ref() else { continue };
        let op = Op::InitAuth(pb::InitAuth {
            token_key: p.key.clone(),
            admin_username: settings.admin_username.clone(),
            admin_password_hash: p.hash.clone(),
            time_ms: now_ms(),
        });
        match writer.propose(op, &Caller::system()).await {
            Ok(_) | Err(ServiceError::Rejected(ApplyError::AuthInitialized)) => {}
            Err(e) => {
                tracing::warn!("auth init not done yet: {e}; retrying");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    }
}

async fn prepare(auth: &Auth, settings: &InitSettings, file: &Path) -> Result<Prepared, AuthError> {
    let key = match &settings.token_key {
        Some(key) => key.clone(),
        None => password::random_bytes(32)?,
    };
    let (password, generated) = match &settings.admin_password {
        Some(password) => (password.clone(), false),
        None => (password::generate()?, true),
    };
    if generated {
        write_password_file(file, &password)
            .map_err(|e| AuthError::Internal(format!("cannot write {}: {e}", file.display())))?;
    }
    let hash = auth.hasher().hash(&password).await?;
    Ok(Prepared {
        key,
        password,
        generated,
        hash,
    })
}

/// After init: report a generated password if it is the one in effect;
/// otherwise drop the file this node wrote.
async fn settle(
    node: &Node,
    auth: &Auth,
    settings: &InitSettings,
    prepared: Option<&Prepared>,
    file: &Path,
) {
    let Some(p) = prepared else {
        if settings.admin_password.is_some() {
            tracing::info!(
                "auth was initialized before; --admin-password is only used at cluster init (change passwords with the users API)"
            );
        }
        return;
    };
    let stored = node
        .state()
        .user(&settings.admin_username)
        .map(|u| u.password_hash.clone());
    let ours = match &stored {
        Some(hash) => auth
            .hasher()
            .verify(&p.password, Some(hash))
            .await
            .unwrap_or(false),
        None => false,
    };
    if !p.generated {
        if ours {
            tracing::info!(user = %settings.admin_username, "auth initialized: first admin created with --admin-password");
        }
        return;
    }
    if ours {
        tracing::warn!(
            user = %settings.admin_username,
            file = %file.display(),
            "auth initialized: the first admin's generated password is {} (shown once; also in the file; change it)",
            p.password
        );
    } else if let Err(e) = std::fs::remove_file(file) {
        tracing::warn!("cannot remove {}: {e}", file.display());
    }
}
